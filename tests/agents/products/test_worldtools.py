"""World tools for product agents: the prompt note, and the shim working in scrubbed or login shells."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from assay.agents.products.worldtools import disclosure, schema_summary, settle_shim, shim_path
from assay.spec.load import load_task
from assay.trace.events import EventKind, Source
from assay.worlds.contract import task_tool_contract
from assay.worlds.service import WorldService
from tests.conftest import ROOT
from tests.worlds.conftest import events, make_handle, make_task

BOOKKEEPING = ROOT / "examples" / "bookkeeping" / "tasks"


def test_note_lists_exactly_the_tools_the_task_allows() -> None:
    task = load_task(BOOKKEEPING / "clear-dinner")
    tools = task_tool_contract(task.spec)
    names = [t["name"] for t in tools]
    # ledger.* from the task, user.* because behaviour is judged; nothing from undeclared worlds
    assert "ledger.record_entry" in names and "user.ask_clarification" in names
    assert not any(n.startswith(("outbox.", "tickets.")) for n in names)
    note = disclosure(tools, shell_for_shim=True)
    for n in names:
        assert f"- {n}: " in note
    assert "assay-tool TOOL_NAME --json" in note and "only to run `assay-tool`" in note
    assert ("date (string, YYYY-MM-DD, required), amount (number, required), currency (one of CNY, USD, EUR, required)"
            in note)
    assert "only to run" not in disclosure(tools, shell_for_shim=False)
    assert disclosure(tools, True) == note  # fixed text: the same task gives the same note


def test_no_worlds_no_note(tmp_path: Path) -> None:
    task = load_task(ROOT / "examples" / "starter" / "tasks" / "dedupe-contacts")
    assert WorldService().tool_contract(task) is None and disclosure([], True) == ""


def test_schema_summary_shapes() -> None:
    assert schema_summary({"properties": {}}) == "no arguments"
    s = schema_summary({"properties": {"ids": {"type": "array", "items": {"type": "string"}},
                                       "n": {"type": ["integer", "null"]}}, "required": ["ids"]})
    assert s == "ids (array of string, required), n (integer/null)"


def test_shim_dir_goes_first_on_path_only_with_a_world_session() -> None:
    assert shim_path({"ASSAY_TOOL": "/assay/home/bin/assay-tool"}, "/usr/bin") == "/assay/home/bin:/usr/bin"
    assert shim_path({}, "/usr/bin") == "/usr/bin"


def test_settle_shim_writes_nothing_without_a_world_session(tmp_path: Path) -> None:
    assert settle_shim(tmp_path, {"ASSAY_TOOL": "/x/bin/assay-tool"}) == []
    assert list(tmp_path.iterdir()) == []


async def test_shim_works_when_the_agent_scrubs_keys_and_in_login_shells(tmp_path: Path) -> None:
    """DSH drops every *KEY* variable from its shell; Hermes runs `bash -l`, which resets PATH.
    After settle_shim both still reach the world with this attempt's key."""
    svc = WorldService()
    await svc.start()
    try:
        handle = make_handle(tmp_path, make_task(tmp_path))
        sess = await svc.open(handle)
        home = handle.scratch / "home"
        url = f"http://127.0.0.1:{sess.endpoints[0].port}"
        env = {k: v.replace("{endpoint:tools}", url).replace("{home}", str(home)) for k, v in sess.env.items()}
        written = settle_shim(home, env)
        assert written == ["bin/assay-tool.json", ".profile"]
        assert (home / "bin" / "assay-tool.json").stat().st_mode & 0o077 == 0
        scrubbed = {k: v for k, v in env.items() if "KEY" not in k}
        assert "ASSAY_TOOLS_KEY" not in scrubbed
        login = subprocess.run(["/bin/bash", "-lc", "assay-tool ledger.list_categories --json '{}'"],
                               env={**scrubbed, "HOME": str(home), "PATH": "/usr/bin:/bin"},
                               capture_output=True, text=True, timeout=60)
        assert login.returncode == 0, login.stderr
        assert "dining" in json.loads(login.stdout)["categories"]
        # a wrong key in the file is refused by the service, never silently accepted
        (home / "bin" / "assay-tool.json").write_text(json.dumps({"url": url, "key": "wk-wrong"}))
        bad = subprocess.run([str(home / "bin" / "assay-tool"), "ledger.list_categories"],
                             env={**scrubbed, "PATH": "/usr/bin:/bin"},
                             capture_output=True, text=True, timeout=60)
        assert bad.returncode == 2 and "401" in bad.stderr
        await sess.close()
    finally:
        await svc.stop()
    calls = [e for e in events(handle) if e.kind == EventKind.tool_call and e.source == Source.world]
    assert [(c.data["name"], c.data["channel"]) for c in calls] == [("ledger.list_categories", "shim")]
