"""``assay tools`` and ``assay approvals`` through the real CLI entry point."""

from __future__ import annotations

import json
from pathlib import Path

from assay.approvals.store import ApprovalStore
from assay.cli.main import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_tools_prints_the_task_contract(capsys):
    assert main(["tools", str(EXAMPLES / "bookkeeping/tasks/opaque-merchant")]) == 0
    names = [t["name"] for t in json.loads(capsys.readouterr().out)]
    assert "ledger.record_entry" in names and "user.ask_clarification" in names and "outbox.send_email" not in names


def test_approvals_list_and_decide(tmp_path, capsys):
    st = ApprovalStore(tmp_path / "trials" / "t1" / "approvals.sqlite")
    req, _ = st.open_or_join("t1", 1, "outbox.send_email", {"to": "a@b.example"})
    st.close()
    assert main(["approvals", "list", str(tmp_path), "--pending"]) == 0
    assert [r["id"] for r in json.loads(capsys.readouterr().out)] == [req.id]
    assert main(["approvals", "decide", str(tmp_path), req.id, "approve"]) == 0
    assert json.loads(capsys.readouterr().out)["state"] == "approved"
    assert main(["approvals", "decide", str(tmp_path), req.id, "maybe"]) == 2
    assert main(["approvals", "decide", str(tmp_path), "nope", "deny"]) == 2
    assert main(["approvals", "list", str(tmp_path / "missing")]) == 2
