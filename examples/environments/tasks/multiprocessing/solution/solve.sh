#!/bin/sh
set -eu
cd "$ASSAY_WORKSPACE"
cat > squares.py <<'PY'
import multiprocessing


def sq(x):
    return x * x


def main():
    with multiprocessing.Pool(2) as pool:
        return pool.map(sq, range(10))


if __name__ == "__main__":
    open("squares.txt", "w").write(" ".join(map(str, main())))
PY
python3 squares.py
