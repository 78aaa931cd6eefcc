"""An import keeps a bounded amount of one trace and says what it cut (issue 28: a single 64 MiB
trace line was kept whole in the candidate and its draft task)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from assay.cases import import_traces
from assay.cases.bound import MAX_JSON, MAX_TEXT
from tests.conftest import assay_env, cli_timeout

HUGE = 2 * 1024 * 1024  # 6 MiB in one line: the class of the 64 MiB one, at a cost CI can carry (redaction scans it)


def huge_trace(path: Path) -> Path:
    line = {"trace_id": "t-huge", "prompt": "Book the dinner. " + "x" * HUGE, "output": "y" * HUGE,
            "tool_calls": [{"name": "ledger.record_entry", "arguments": {"note": "z" * HUGE}, "result": {"ok": True},
                            "ok": True}]}
    path.write_text(json.dumps(line) + "\n")
    return path


def test_a_huge_trace_line_is_bounded_and_the_cut_recorded(tmp_path: Path) -> None:
    rep = import_traces(huge_trace(tmp_path / "t.jsonl"), "jsonl", tmp_path / "cases")
    (cid,) = rep.new
    cand_dir = tmp_path / "cases" / "candidates" / cid
    total = sum(p.stat().st_size for p in cand_dir.rglob("*") if p.is_file())
    assert total < 8 * (MAX_TEXT + MAX_JSON), total  # nothing near the 6 MiB the trace held
    cut_fields = {c["field"] for c in rep.cut[0]["cuts"]}
    assert {"prompt", "output", "tool_calls.0.arguments"} <= cut_fields
    cand = json.loads((cand_dir / "candidate.json").read_text())
    assert {c["field"] for c in cand["sources"][0]["cut"]} == cut_fields  # recorded with the trace's source
    prompt = (cand_dir / "draft" / "prompt.md").read_text()
    assert prompt.startswith("Book the dinner.") and "cut by assay import" in prompt


def test_the_cli_says_what_was_cut(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "assay.cli.main", "import", "traces", str(huge_trace(tmp_path / "t.jsonl")),
                        "-f", "jsonl", "-o", str(tmp_path / "cases")], capture_output=True, text=True, env=assay_env(),
                       timeout=cli_timeout())
    assert r.returncode == 0, r.stderr
    assert "cut from trace t-huge" in r.stderr and "prompt" in r.stderr
