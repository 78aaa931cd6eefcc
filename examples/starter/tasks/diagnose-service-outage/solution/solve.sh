#!/bin/sh
# Reference solution: the answer only; nothing else in the workspace is touched.
set -eu
first=$(grep -h 'password authentication failed' logs/*.log | sort | head -n 1 | cut -d' ' -f1)
printf 'root_cause: db_auth_failure\ncomponent: db\nfirst_failure: %s\n' "$first" > answer.txt
