require('webpack/lib/util/createHash')('md4')
