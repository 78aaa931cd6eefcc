#!/bin/sh
# Reference solution: replace the stub with an implementation of the docstring.
set -eu
python3 - <<'PY'
from pathlib import Path

p = Path("textutil.py")
src = p.read_text()
impl = '''    text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode("ascii").lower()
    slug = re.sub(r"[^a-z0-9]+", "-", text).strip("-")
    if not slug:
        return "untitled"
    if len(slug) > max_len:
        cut = slug.rfind("-", 0, max_len + 1)
        slug = slug[:cut] if cut > 0 else slug[:max_len]
    return slug
'''
src = src.replace("    raise NotImplementedError\n", impl)
src = src.replace('"""Small text helpers for the blog engine."""\n',
                  '"""Small text helpers for the blog engine."""\n\nimport re\nimport unicodedata\n')
p.write_text(src)
PY
