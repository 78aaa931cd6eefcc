"""Trees an agent makes that attack the harness's own work on them, through the real trial
engine in bwrap and inside a second wall (``unshare --pid --fork``): a FIFO whose name is not
UTF-8 must cost the agent at most its own verdict, never the run its result; a workspace of
100,000 files must be read by the harness within bounds on entries, with the overflow recorded
as unknown (never as "unchanged") rather than walked to the end."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.conftest import write_suite, write_task
from .walled import run_walled

pytestmark = [pytest.mark.usefixtures("bwrap_backend"), pytest.mark.slow]

FIFO = """
    import os
    open("answer.txt", "w").write("42")
    os.mkfifo(b"pipe-\\xff\\xfe")
    os.mkfifo(b"sub-\\xc3")
"""
MANY = """
    import os
    open("answer.txt", "w").write("42")
    os.mkdir("many")
    for i in range(100_000):
        open("many/" + str(i), "w").close()
"""


def _run(tmp_path: Path, name: str, script: str, *, risk: str | None = None) -> dict:
    suite = write_suite(tmp_path / "suite")
    task = {"category": "code", "budget": {"wall_time_s": 120},
            "predicates": [{"id": "answer", "kind": "file_contains", "path": "answer.txt", "text": "42"}]}
    if risk:
        task["risk"] = risk
    write_task(suite, "answer", task=task)
    agent = tmp_path / f"{name}.yaml"  # the script inline: tmp_path is not readable by the agent's identity
    agent.write_text(yaml.safe_dump({"name": name, "kind": "command",
                                     "command": [sys.executable, "-c", textwrap.dedent(script)]}))
    return run_walled(f"""
        from assay.run import RunOptions, start_run
        out = start_run(RunOptions(suite=Path({str(suite)!r}), agents=[{str(agent)!r}],
                                   out=Path({str(tmp_path / 'run')!r}), sandbox="bwrap", max_retries=0))
        [r] = out.results
        answer({{"end": r.end_state.value, "reason": r.reason, "errors": list(r.errors),
                 "extra": r.extra, "incidents": [i.model_dump() for i in r.incidents]}})
    """, timeout=900)


def test_fifo_with_a_non_utf8_name_keeps_the_run_and_its_result(tmp_path: Path) -> None:
    r = _run(tmp_path, "fifo", FIFO)
    assert r["end"] == "pass", r
    skipped = r["extra"].get("skipped_entries") or []
    assert "pipe-\\xff\\xfe" in skipped, r  # recorded, escaped, never lost
    json.dumps(r)


def test_a_hundred_thousand_files_are_read_within_bounds(tmp_path: Path) -> None:
    r = _run(tmp_path, "many", MANY, risk="read_only")
    # the read-only task's workspace changed: the overflow is unknown, never "unchanged"
    assert r["end"] in ("pass", "fail"), r
    assert r["extra"].get("tree_bounded") == {"max_entries": 50_000, "max_seconds": 60.0}, r
    assert any(i["type"] == "read_only_write" for i in r["incidents"]), r
