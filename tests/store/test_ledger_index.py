"""The compact ledger index against the dict it replaced: the same digest for every path, the
same paths left for the end of the scan, the ledger split into the same lines; and its size."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from assay.store.ledger_index import HEX64, SealedIndex, digest_bytes, iter_lines
from assay.store.ledger_line import ledger_record as _ledger_record


def reference(path: Path) -> dict[str, str]:
    """The ledger as the scan read it before: the whole file, splitlines, the last record wins."""
    out: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        rec = _ledger_record(line)
        if rec is not None:
            out[rec[0]] = rec[1]
    return out


PATHS = st.sampled_from(["manifest.json", "trials/a/trace.jsonl", "trials/a/attempts/1/result.json",
                         "trials/b/x", "trials/\u00e9\u2028/y", "scores/score-0001.json"])
DIGESTS = st.one_of(st.sampled_from(["0" * 64, "ab" * 32, "f" * 64]), st.text(max_size=70))
RECORD = st.builds(lambda p, d: json.dumps({"path": p, "sha256": d, "ts": 1.0}), PATHS, DIGESTS)
LINE = st.one_of(RECORD, RECORD, st.sampled_from(['{"torn": ', "[1, 2]", "", "\r", '{"sha256": "x"}']),
                 st.text(max_size=20))
SEPARATORS = st.sampled_from(["\n", "\r\n", "\r", "\x85", "\u2028", "\x0b"])


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.one_of(st.text(max_size=8), SEPARATORS, st.binary(max_size=4)), max_size=20))
def test_lines_are_split_as_read_text_splits_them(tmp_path_factory, chunks: list) -> None:
    p = tmp_path_factory.mktemp("l") / "f"
    p.write_bytes(b"".join(c if isinstance(c, bytes) else c.encode("utf-8", "surrogatepass") for c in chunks))
    expected = list(enumerate(p.read_text(encoding="utf-8", errors="replace").splitlines(), 1))
    assert list(iter_lines(p)) == expected


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.tuples(LINE, SEPARATORS), max_size=25), compared=st.lists(PATHS, max_size=4),
       trailing=st.booleans())
def test_index_answers_as_the_dict_did(tmp_path_factory, lines: list, compared: list[str], trailing: bool) -> None:
    p = tmp_path_factory.mktemp("l") / "ledger.jsonl"
    p.write_text("".join(a + b for a, b in lines) + ("\n" if trailing else ""), encoding="utf-8", newline="")
    ref = reference(p)
    idx = SealedIndex(p, _ledger_record)
    assert len(idx) == len(ref)
    for rel in [*ref, "trials/none", "manifest.json", "trials/a"]:
        assert idx.get(rel) == ref.get(rel) and (rel in idx) == (rel in ref)
    for rel in compared:
        assert idx.compare(rel) == ref.get(rel)
    assert idx.unchecked() == sorted((r, d) for r, d in ref.items() if r not in compared)


def test_no_ledger_is_an_empty_index(tmp_path: Path) -> None:
    idx = SealedIndex(tmp_path / "missing.jsonl", _ledger_record)
    assert len(idx) == 0 and idx.get("manifest.json") is None and "x" not in idx and idx.unchecked() == []


def test_index_of_many_paths_is_a_fraction_of_the_dict(tmp_path: Path) -> None:
    """What grew with the trials: ~230 bytes a sealed path as a dict of strings, ~50 here."""
    n = 100_000
    p = tmp_path / "ledger.jsonl"
    with open(p, "w") as f:
        for i in range(n):
            f.write(json.dumps({"path": f"trials/task{i}.base.alpha.r1/attempts/1/result.json",
                                "sha256": f"{i:064x}", "ts": 1.0}) + "\n")
    tracemalloc.start()
    try:
        idx = SealedIndex(p, _ledger_record)
        held, _peak = tracemalloc.get_traced_memory()
        d = reference(p)
        both, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert idx.get(f"trials/task{n - 1}.base.alpha.r1/attempts/1/result.json") == f"{n - 1:064x}"
    assert len(d) == n
    assert held / n < 80, f"{held / n:.0f} bytes a path"
    assert (both - held) / n > 3 * held / n  # the dict it replaced, measured the same way


_HEXISH = st.text(alphabet=st.sampled_from(list("0123456789abcdefABCDEF \t\n\u00e9g-") + ["\u0660", "\uff10"]),
                  min_size=60, max_size=68)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(_HEXISH, st.binary(min_size=32, max_size=32).map(bytes.hex),
                      st.binary(min_size=32, max_size=32).map(lambda b: b.hex().upper()),
                      st.binary(min_size=32, max_size=32).map(lambda b: b.hex()[:-1] + " "),
                      st.binary(min_size=32, max_size=32).map(lambda b: b.hex() + "\n")))
def test_a_digest_is_read_exactly_when_the_pattern_takes_it(text: str) -> None:
    """digest_bytes is the pattern HEX64 without a regular expression: the same texts taken, the
    same bytes given."""
    got = digest_bytes(text)
    assert (got is not None) == bool(HEX64.fullmatch(text))
    assert got is None or got == bytes.fromhex(text)
