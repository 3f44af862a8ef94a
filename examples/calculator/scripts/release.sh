#!/bin/sh
set -e
echo "building release"
python -m build
