#!/bin/sh
# Reference solution: parse the level field itself, not any "[ERROR]" substring.
set -eu
python3 - <<'PY'
import json
import re

line_re = re.compile(r"^(\S+) \[([A-Z]+)\] ([a-z]+): (.*)$")
with open("events.log") as src, open("errors.jsonl", "w") as out:
    for line in src:
        m = line_re.match(line.rstrip("\n"))
        if m and m.group(2) == "ERROR":
            out.write(json.dumps({"ts": m.group(1), "service": m.group(3), "message": m.group(4)}) + "\n")
PY
