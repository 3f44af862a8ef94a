const gulp = require('gulp');
