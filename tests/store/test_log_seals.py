"""The seals of the results log's lines, matched where the log is indexed (store/log_seals.py), name
exactly what a plain reading of the ledger and the log names: random runs, randomly tampered (a line
edited, removed, repeated, added without a seal; a seal added for no line, sealed again with another
or an odd digest, or spelling its attempt otherwise), checked in this process and in the child
process that indexes a large log, against an independent reference written here."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import assay.store.log_child as log_child
from assay.store.integrity import verify_run
from assay.store.rundir import RunDir
from tests.score.synth import attempt, manifest, trial_id

LOG_PREFIX = "results.jsonl"


def make_run(path: Path, n: int, retried: set[int]) -> Path:
    planned = [trial_id(f"t{i % 3}", "base", "a", i // 3 + 1) for i in range(n)]
    m = manifest({"code": 1}, ["a"], planned)
    rd = RunDir.create(path, m.model_copy(update={"plan": m.plan.model_copy(update={"results": "log"})}))
    for i, tid in enumerate(planned):
        task, _v, agent, rep = tid.split(".")
        rd.write_result(attempt(task, "code", agent, int(rep[1:]), ["pass", "fail"][i % 2], retryable=i in retried))
        if i in retried:
            rd.write_result(attempt(task, "code", agent, int(rep[1:]), "pass", attempt=2))
    return rd.path


def seal(run: Path, key: str, digest: str) -> None:
    with open(run / "ledger.jsonl", "a") as f:
        f.write(json.dumps({"path": key, "sha256": digest, "ts": 1.0}, sort_keys=True) + "\n")


def tamper(run: Path, ops: list[tuple[str, int]]) -> None:
    log = run / "results.jsonl"
    for op, k in ops:
        lines = log.read_bytes().splitlines(keepends=True)
        if not lines:
            return  # every line removed: nothing left to change
        i = k % len(lines)
        rec = json.loads(lines[i])
        key = f"{LOG_PREFIX}/{rec['trial_id']}/{rec['attempt']}"
        if op == "edit":
            lines[i] = lines[i].replace(b'"end_state":"fail"', b'"end_state":"pass"').replace(b'"cost_usd":0.0',
                                                                                            b'"cost_usd":1.0')
        elif op == "remove":
            del lines[i]
        elif op == "repeat":
            lines.append(lines[i])
        elif op == "unsealed":
            lines.append(lines[i].replace(rec["trial_id"].encode(), b"t9.base.a.r" + str(k).encode()))
        elif op == "sealed_no_line":
            seal(run, f"{LOG_PREFIX}/t8.base.a.r{k}/1", "ab" * 32)
        elif op == "resealed":
            seal(run, key, hashlib.sha256(lines[i].rstrip(b"\n") + b"x").hexdigest())
        elif op == "resealed_same":
            seal(run, key, hashlib.sha256(lines[i].rstrip(b"\n")).hexdigest())
        elif op == "odd_digest":
            seal(run, key, "not a digest")
        elif op == "spelled_otherwise":
            seal(run, f"{LOG_PREFIX}/{rec['trial_id']}/0{rec['attempt']}", "cd" * 32)
        elif op == "unicode_digit":  # str.isdigit holds for both; int refuses the first, reads the second as 1
            seal(run, f"{LOG_PREFIX}/{rec['trial_id']}/{'²' if k % 2 else '١'}", "ef" * 32)
        log.write_bytes(b"".join(lines))


def reference(run: Path) -> list[str]:
    """What the ledger and the log say, read plainly: a dict of the latest seals, the lines in order."""
    sealed: dict[str, str] = {}
    for line in (run / "ledger.jsonl").read_text().splitlines():
        rec = json.loads(line)
        sealed[rec["path"]] = rec["sha256"]
    out, firsts, offset = [], set(), 0
    for raw in (run / "results.jsonl").read_bytes().splitlines(keepends=True):
        data = raw.rstrip(b"\n")
        rec = json.loads(data)
        tid, n = rec["trial_id"], rec["attempt"]
        key, actual = f"{LOG_PREFIX}/{tid}/{n}", hashlib.sha256(data).hexdigest()
        if key in firsts:
            out.append(f"{LOG_PREFIX}: byte {offset}: a second result of {tid} attempt {n} (a result is written once)")
        else:
            firsts.add(key)
            want = sealed.get(key)
            if want is None:
                out.append(f"{LOG_PREFIX}: byte {offset}: the result of {tid} attempt {n} is not in the ledger "
                           "(added after the run?)")
            elif want != actual:
                out.append(f"{LOG_PREFIX}: byte {offset}: the result of {tid} attempt {n} was modified after it was "
                           f"written (sha256 {actual[:12]} != sealed {want[:12]})")
        offset += len(raw)
    for key in sealed:
        if key.startswith(LOG_PREFIX + "/") and key not in firsts:
            tid, _, n = key[len(LOG_PREFIX) + 1:].rpartition("/")
            out.append(f"{LOG_PREFIX}: the result of {tid} attempt {n} was sealed but has no line in the log "
                       "(removed or changed after it was written)")
    return sorted(out)


def log_problems(run: Path) -> list[str]:
    return sorted(p for p in verify_run(run).problems if p.startswith(LOG_PREFIX))


OPS = st.lists(st.tuples(st.sampled_from(["edit", "remove", "repeat", "unsealed", "sealed_no_line", "resealed",
                                          "resealed_same", "odd_digest", "spelled_otherwise",
                                          "unicode_digit"]),
                         st.integers(0, 50)), max_size=4)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                 HealthCheck.too_slow])
@given(n=st.integers(1, 8), retried=st.sets(st.integers(0, 7), max_size=3), ops=OPS)
def test_the_seals_name_what_a_plain_reading_names(tmp_path_factory: pytest.TempPathFactory,
                                                   monkeypatch: pytest.MonkeyPatch, n: int, retried: set[int],
                                                   ops: list[tuple[str, int]]) -> None:
    run = make_run(tmp_path_factory.mktemp("seals") / "run", n, retried)
    tamper(run, ops)
    want = reference(run)
    monkeypatch.setenv("ASSAY_SCAN_WORKERS", "0")
    assert log_problems(run) == want  # matched in this process
    assert verify_run(run).ok == (not want)


@pytest.mark.parametrize("ops", [[], [("edit", 1)], [("remove", 0), ("repeat", 2)], [("unsealed", 3)],
                                 [("resealed", 1), ("odd_digest", 2), ("sealed_no_line", 4)],
                                 [("spelled_otherwise", 0), ("resealed_same", 1)],
                                 [("unicode_digit", 1), ("unicode_digit", 2)]])
@pytest.mark.parametrize("halves", [False, True])
def test_the_child_that_indexes_the_log_matches_the_same_seals(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                               ops: list[tuple[str, Any]], halves: bool) -> None:
    """Also when the child indexes the log in halves, the second by a process of its own."""
    run = make_run(tmp_path / "run", 6, {1, 4})
    tamper(run, ops)
    monkeypatch.setattr(log_child, "CHILD_FROM", 0)
    monkeypatch.setattr(log_child, "HALVES_FROM", 0 if halves else 1 << 62)
    monkeypatch.setattr(log_child, "usable_cores", lambda: 2)
    monkeypatch.delenv("ASSAY_SCAN_WORKERS", raising=False)
    spawned: list[list[str]] = []
    real = log_child.subprocess.Popen

    def popen(argv: list[str], **kw: Any) -> Any:
        spawned.append(argv)
        return real(argv, **kw)

    monkeypatch.setattr(log_child.subprocess, "Popen", popen)
    assert log_problems(run) == reference(run)
    assert spawned and "seals" in spawned[0]  # the child matched them
    assert ("halves" in spawned[0]) == halves


@pytest.mark.parametrize("attempt", ["²", "١", "9" * 5000])
def test_a_seal_whose_attempt_is_a_digit_int_cannot_read_is_named_not_a_crash(tmp_path: Path, attempt: str) -> None:
    """A ledger record of the log whose attempt is a superscript two (``int`` refuses it), an
    Arabic-Indic one (``int`` reads 1) or 5,000 digits (past CPython's limit for ``int`` of text)
    names no line: a sealed result with no line, exit 3."""
    run = make_run(tmp_path / "run", 2, set())
    tid = json.loads((run / "results.jsonl").read_bytes().splitlines()[0])["trial_id"]
    seal(run, f"{LOG_PREFIX}/{tid}/{attempt}", "ef" * 32)
    assert log_problems(run) == reference(run) == [
        f"{LOG_PREFIX}: the result of {tid} attempt {attempt} was sealed but has no line in the log "
        "(removed or changed after it was written)"]


@pytest.mark.parametrize("attempt", [10**20, -(10**20)])
def test_a_log_line_whose_attempt_no_index_can_hold_is_named_not_a_crash(tmp_path: Path, attempt: int) -> None:
    """The index keeps attempts as 64-bit integers: a line claiming attempt 10^20 was an
    OverflowError out of `assay verify` and `assay score` (a traceback, no report). No harness
    writes such a line: it is a line that is JSON but no result, named with its byte."""
    import subprocess
    import sys

    from tests.conftest import cli_timeout

    run = make_run(tmp_path / "run", 2, set())
    log = run / "results.jsonl"
    at = log.stat().st_size
    rec = json.loads(log.read_bytes().splitlines()[0])
    with open(log, "a") as f:
        f.write(json.dumps({**rec, "attempt": attempt}, separators=(",", ":")) + "\n")
    assert f"{LOG_PREFIX}: byte {at}: a line that is JSON but no result (added after the run?)" in log_problems(run)
    for command in ("verify", "score"):
        cli = subprocess.run([sys.executable, "-m", "assay.cli.main", command, str(run)], capture_output=True,
                             text=True, timeout=cli_timeout())
        assert cli.returncode == 3 and "Traceback" not in cli.stderr, cli.stderr[-2000:]
