#!/bin/sh
# Generates the live log and three older archives (deterministic content, gzip mtime 0).
set -eu
mkdir -p logs
python3 - <<'PY'
import gzip

def segment(name, start, lines):
    out = [f"# segment: {name}"]
    for i in range(lines):
        n = start + i
        status = 500 if n % 37 == 0 else 200
        out.append(f"2024-06-10T{8 + n // 3600:02d}:{n // 60 % 60:02d}:{n % 60:02d}Z INFO request id={n} status={status} ms={(n * 7) % 90 + 3}")
    return ("\n".join(out) + "\n").encode()

with open("logs/app.log", "wb") as f:
    f.write(segment("current", 3000, 120))
for k, (start, lines) in {1: (2000, 90), 2: (1000, 60), 3: (0, 30)}.items():
    with open(f"logs/app.log.{k}.gz", "wb") as f:
        f.write(gzip.compress(segment(str(k), start, lines), mtime=0))
PY
