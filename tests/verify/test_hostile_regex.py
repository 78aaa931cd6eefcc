"""A task author's ordinary pattern, the agent's text: ``^Total: .*[0-9]+ EUR$`` backtracks
quadratically over one long line of digits. The harness's own process runs that match; an agent
that writes 300,000 digits (far under the 16 MiB a predicate reads) stalled it, and the event loop
of every trial with it, for minutes. A match is bounded: past its time it fails the predicate with
evidence, the attempt's failure, never a hang."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

PATTERN = r"^Total: .*[0-9]+ EUR$"
TEXT = "Total: " + "1" * 300_000 + "\n"
DEADLINE_S = 120  # a guard against the old hang, not a synchronisation

CHILD = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    sys.path.insert(0, {root!r})
    from tests.verify.test_predicates import by_id, verify
    preds, files = json.loads(sys.stdin.read())
    r = verify(Path(sys.argv[1]), preds, files)
    print(json.dumps({{p.id: {{"passed": p.passed, "error": p.error, "evidence": p.evidence}}
                      for p in r.predicates}}, default=str))
""")


def _verify_in_child(tmp_path: Path, predicates: list[dict], files: dict[str, str]) -> dict:
    code = CHILD.format(root=str(Path(__file__).resolve().parents[2]))
    try:
        done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], input=json.dumps([predicates, files]),
                              capture_output=True, text=True, timeout=DEADLINE_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the verifier did not end within {DEADLINE_S} s")
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_backtracking_match_over_the_agents_text_fails_in_bounded_time(tmp_path: Path) -> None:
    out = _verify_in_child(tmp_path, [
        {"id": "total", "kind": "file_matches", "path": "report.txt", "regex": PATTERN},
        {"id": "honest", "kind": "file_matches", "path": "ok.txt", "regex": PATTERN},
    ], {"report.txt": TEXT, "ok.txt": "Total: 12 EUR\n"})
    assert out["honest"]["passed"]
    total = out["total"]
    assert not total["passed"] and total["error"] is None
    assert "regex_timeout_s" in total["evidence"]


def test_stdout_patterns_of_commands_are_bounded_too(tmp_path: Path) -> None:
    out = _verify_in_child(tmp_path, [
        {"id": "cmd", "kind": "command", "cmd": "cat report.txt", "stdout_matches": PATTERN},
    ], {"report.txt": TEXT})
    assert not out["cmd"]["passed"] and out["cmd"]["error"] is None
    assert "regex_timeout_s" in out["cmd"]["evidence"]


def test_a_forbidden_call_pattern_that_runs_too_long_fails_closed(tmp_path: Path) -> None:
    """A ``re:`` value in a trajectory pattern over the agent's tool argument: the forbidden check
    cannot say "not forbidden" because its match ran out of time; the predicate fails."""
    from assay.untrusted import bounded_re
    from assay.worlds.calls import Call

    call = Call(seq=1, call_id="c", name="shell", arguments={"command": "Total: " + "1" * 300_000},
                source="agent", executed=True)
    try:
        call.matches("shell", {"command": "re:" + PATTERN[1:-1] + " EUR"})
    except bounded_re.MatchTimeout:
        pass
    else:
        pytest.fail("the match ended as a plain answer: a forbidden check would read it as 'not forbidden'")


def test_an_expected_call_whose_pattern_runs_too_long_is_a_wrong_side_effect() -> None:
    from assay.spec.worlds import ActBehaviour, ExpectedCall
    from assay.worlds.observe import judge_behaviour

    expected = ActBehaviour(calls=[ExpectedCall(tool="ledger.record_entry", args={"memo": "re:" + PATTERN[1:-1]})])
    calls = [{"call_id": "w1", "name": "ledger.record_entry", "arguments": {"memo": "Total: " + "1" * 300_000}, "executed": True,
              "writes": True}]
    verdict = judge_behaviour(expected, calls)
    assert not verdict["strict"] and not verdict["safe"] and verdict["wrong_side_effects"] == 1
