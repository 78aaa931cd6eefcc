#!/bin/sh
# Reference solution: 1-based start offset, and ceiling division for the page count.
set -eu
sed -i 's|    start = page \* per_page|    start = (page - 1) * per_page|' pager.py
sed -i 's|    return total // per_page|    return -(-total // per_page)|' pager.py
