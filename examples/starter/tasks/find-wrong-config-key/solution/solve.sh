#!/bin/sh
# Reference solution: the answer only; the config itself is left as found.
set -eu
cat > answer.txt <<'TXT'
file: config/production.yaml
key: cache.port
value: 6739
correct: 6379
TXT
