#!/bin/sh
set -eu
cd "$ASSAY_WORKSPACE"
jq -r '.[] | "\(.name) \(.age)"' people.json | gawk '$2 >= 30 {print $1}' > adults.txt
