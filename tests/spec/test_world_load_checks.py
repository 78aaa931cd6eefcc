"""A task whose worlds and predicates contradict each other is refused when it loads (the
author's error, never the agent's): a gated webshop action with no policy that asks for its
approval, and a predicate that names a world the task does not declare. Each names the file,
the field and the fix; ``assay validate`` and ``assay run`` exit 2 and nothing is written."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from tests.conftest import run_assay

SUITE = Path(__file__).resolve().parents[2] / "examples" / "webshop"


def _suite(tmp_path: Path, task: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The suite with only ``task`` left (validate runs each oracle in Chromium), edited."""
    s = tmp_path / "s"
    shutil.copytree(SUITE, s)
    for d in (s / "tasks").iterdir():
        if d.name != task:
            shutil.rmtree(d)
    p = s / "tasks" / task / "task.yaml"
    suite = yaml.safe_load((s / "suite.yaml").read_text())
    suite["categories"] = [c for c in suite["categories"] if c["id"] == yaml.safe_load(p.read_text())["category"]]
    (s / "suite.yaml").write_text(yaml.safe_dump(suite))
    data = yaml.safe_load(p.read_text())
    edit(data)
    p.write_text(yaml.safe_dump(data, sort_keys=False))
    return s


def _no_approvals(d: dict[str, Any]) -> None:
    d.pop("approvals")
    d["worlds"]["webshop"]["approval_required"] = ["delete_customer"]


def _policy_allows(d: dict[str, Any]) -> None:
    d["approvals"]["policies"] = [{"tool": "webshop.request_approval", "args": {"target": "C12"}, "action": "ask"}]


def _refund_gated_without_policy(d: dict[str, Any]) -> None:
    d["approvals"]["policies"] = [{"tool": "webshop.request_approval", "args": {"action": "delete_customer"},
                                   "action": "ask"}]
    d["worlds"]["webshop"]["approval_required"] = ["delete_customer", "refund_order"]


def _undeclared_http_world(d: dict[str, Any]) -> None:
    d["predicates"].append({"id": "shop-log", "kind": "http_request", "world": "shop", "method": "POST"})


def _undeclared_rows_world(d: dict[str, Any]) -> None:
    d["predicates"].append({"id": "rows", "kind": "world_rows", "world": "ledger", "table": "entries", "count": 0})


def _own_browser_without_app(d: dict[str, Any]) -> None:
    d["tools"] = ["browser", "write"]
    d.pop("worlds")
    d["predicates"] = [p for p in d["predicates"] if p["kind"] not in ("http_request", "world_unchanged")]


CASES = [
    ("delete-with-approval", _no_approvals, "worlds.webshop.approval_required",
     "no `approvals:` policy asks for webshop.request_approval"),
    ("delete-with-approval", _policy_allows, "approvals.policies",
     "webshop.request_approval of delete_customer is allowed without asking"),
    ("delete-with-approval", _refund_gated_without_policy, "approvals.policies",
     "webshop.request_approval of refund_order is allowed without asking"),
    ("lookup-tier", _undeclared_http_world, "predicates.", "world 'shop' is not declared"),
    ("lookup-tier", _undeclared_rows_world, "predicates.", "world 'ledger' is not declared"),
    ("lookup-tier", _own_browser_without_app, "tools", "no web-app world is declared"),
]


@pytest.mark.parametrize(("task", "edit", "field", "says"), CASES, ids=[c[1].__name__ for c in CASES])
def test_validate_refuses_it_naming_file_field_and_fix(tmp_path: Path, task: str, edit, field: str, says: str) -> None:
    p = run_assay("validate", str(_suite(tmp_path, task, edit)))
    assert p.returncode == 2, p.stdout + p.stderr
    assert says in p.stderr and f"tasks/{task}/task.yaml" in p.stderr and field in p.stderr, p.stderr
    assert "fix:" in p.stderr and "Traceback" not in p.stderr


@pytest.mark.parametrize("edit", [_no_approvals, _undeclared_http_world], ids=["approval", "world"])
def test_run_refuses_it_before_writing_anything(tmp_path: Path, edit) -> None:
    task = "delete-with-approval" if edit is _no_approvals else "lookup-tier"
    out = tmp_path / "run"
    p = run_assay("run", str(_suite(tmp_path, task, edit)), "--agent", "nop", "-o", str(out))
    assert p.returncode == 2, p.stdout + p.stderr
    assert "Traceback" not in p.stderr and not out.exists()


def test_the_shipped_webshop_suite_still_loads() -> None:
    from assay.spec.load import load_suite

    assert len(load_suite(SUITE).tasks) == 6
