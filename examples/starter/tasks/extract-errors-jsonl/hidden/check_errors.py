"""Hidden checker: errors.jsonl holds exactly the expected error events, in log order.

Usage: python check_errors.py WORKSPACE_FILE   (run from the hidden directory)
Compares parsed objects, so key order and spacing inside each JSON line do not matter.
"""

import json
import sys
from pathlib import Path


def main(path: str) -> int:
    expected = json.loads(Path(__file__).with_name("expected_errors.json").read_text())
    try:
        got = [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]
    except (OSError, ValueError) as e:
        print(f"cannot read {path}: {e}")
        return 1
    if got == expected:
        print(f"OK: {len(got)} error events")
        return 0
    print(f"expected {len(expected)} events, got {len(got)}")
    for i, (g, w) in enumerate(zip(got, expected)):
        if g != w:
            print(f"line {i + 1}: got {g!r}, expected {w!r}")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
