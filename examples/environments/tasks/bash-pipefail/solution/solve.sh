#!/bin/bash
set -euo pipefail
cd "$ASSAY_WORKSPACE"
levels=(ERROR)
grep -c "${levels[0]}" log.txt | tr -d ' ' > errors.txt
