"""Print the most frequent words of a text file: ``python3 wordfreq.py FILE [-n N]``."""

import argparse
from collections import Counter


def top_words(text, n=10):
    """The ``n`` most frequent words of ``text`` as (word, count) pairs."""
    counts = Counter(text.split())
    return sorted(counts.items(), key=lambda kv: -kv[1])[:n]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("file")
    parser.add_argument("-n", type=int, default=10, help="how many words to print")
    args = parser.parse_args(argv)
    with open(args.file, encoding="utf-8") as f:
        text = f.read()
    for word, count in top_words(text, args.n):
        print(f"{word} {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
