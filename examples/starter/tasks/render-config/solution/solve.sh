#!/bin/sh
# Reference solution: substitute ${NAME} and ${NAME:-default} from prod.env.
set -eu
python3 - <<'PY'
import re
from pathlib import Path

values = {}
for line in Path("deploy/prod.env").read_text().splitlines():
    line = line.strip()
    if line and not line.startswith("#"):
        key, _, val = line.partition("=")
        values[key.strip()] = val.strip()

def fill(m):
    name, default = m.group(1), m.group(3)
    if name in values:
        return values[name]
    if default is None:
        raise SystemExit(f"no value for {name}")
    return default

text = Path("deploy/app.ini.tmpl").read_text()
Path("deploy/app.ini").write_text(re.sub(r"\$\{([A-Z_][A-Z0-9_]*)(:-([^}]*))?\}", fill, text))
PY
