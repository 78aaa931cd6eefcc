#!/bin/sh
# Reference solution: normalise words (case, surrounding punctuation) and sort ties by word.
set -eu
python3 - <<'PY'
from pathlib import Path

p = Path("wordfreq.py")
src = p.read_text()
src = src.replace(
    "    counts = Counter(text.split())\n    return sorted(counts.items(), key=lambda kv: -kv[1])[:n]\n",
    "    words = (w.strip(string.punctuation).lower() for w in text.split())\n"
    "    counts = Counter(w for w in words if w)\n"
    "    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:n]\n",
)
src = src.replace("import argparse\n", "import argparse\nimport string\n")
p.write_text(src)
PY
