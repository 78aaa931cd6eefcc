#!/bin/sh
# Reference solution: day-first slashes, and accept abbreviated month names too.
set -eu
sed -i 's|    "%m/%d/%Y",|    "%d/%m/%Y",|' dates.py
sed -i 's|    "%d %B %Y",|    "%d %b %Y",\n    "%d %B %Y",|' dates.py
