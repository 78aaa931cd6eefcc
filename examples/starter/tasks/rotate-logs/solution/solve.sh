#!/bin/sh
# Reference solution: drop the oldest, shift the rest, compress the live log, recreate it.
set -eu
cd logs
rm -f app.log.3.gz
mv app.log.2.gz app.log.3.gz
mv app.log.1.gz app.log.2.gz
gzip -n -c app.log > app.log.1.gz
: > app.log
