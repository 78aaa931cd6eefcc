#!/bin/sh
# Reference solution: write build.sh, then run it.
set -eu
cat > build.sh <<'SH'
#!/bin/sh
# Bundle src/ in the order of src/ORDER into dist/app.js, with a sha256sum file.
set -eu
cd "$(dirname "$0")"
mkdir -p dist
{
  printf '// app %s\n' "$(cat VERSION)"
  grep -v '^#' src/ORDER | while read -r f; do
    [ -n "$f" ] || continue
    printf '// --- %s ---\n' "$f"
    cat "src/$f"
  done
} > dist/app.js.tmp
mv dist/app.js.tmp dist/app.js
(cd dist && sha256sum app.js > app.js.sha256)
SH
sh build.sh
