#!/bin/sh
# Reference solution: read the manifest (skipping its header) and move each file.
set -eu
tail -n +2 renames.csv | while IFS=, read -r old new; do
  mkdir -p "$(dirname "$new")"
  mv -- "$old" "$new"
done
