"""Hermes' and OpenClaw's own session stores in a conversation, built by the products' own code
(Hermes' ``SessionDB``, OpenClaw's ``doctor --session-sqlite import``), never by a copy of their
schema: the typed history goes in as the product stores it and comes back, through the product's
own loader, as the same messages; between turns the store is read as hostile input (a store
replaced by a link to a perfectly valid database elsewhere is not followed, a second session or a
session without the earlier turns is a lost session)."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from assay.agents.base import SessionLost
from assay.agents.history import chat_messages
from assay.agents.products import install
from assay.agents.products.hermes import conversation as hermes_session
from assay.agents.products.hermes.session_format import HERMES_TOOLS
from assay.agents.products.openclaw import conversation as openclaw_session
from assay.agents.products.pi.conversation import seeded_session
from assay.agents.products.pi.session_format import OPENCLAW_TOOLS
from assay.agents.products.seeding import tool_namer
from assay.spec.conversation import ConversationSpec

pytestmark = [pytest.mark.agents]

SID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"


def _history() -> tuple:
    return tuple(ConversationSpec.model_validate({"history": [
        {"type": "user", "text": "Record 86 CNY at Lumen Kitchen on 2026-03-20."},
        {"type": "tool", "name": "ledger.record_entry", "arguments": {"amount": 86}, "result": {"id": "e3"}},
        {"type": "tool", "name": "shell", "arguments": {"command": "ls"}, "result": "a.txt"},
        {"type": "agent", "text": "Recorded under groceries (e3)."},
        {"type": "correction", "text": "That was wrong, it is dining."},
        {"type": "claim", "text": "Already fixed.", "name": "ledger.amend_entry", "arguments": {"id": "e3"}}],
        "turns": [{"user": "x"}]}).history)


def _need(agent: str) -> install.Installation:
    inst = install.find(agent)
    if inst is None:
        pytest.skip(f"{agent} is not installed (assay agents install {agent})")
    return inst


# ---------------------------------------------------------------------------------------------- Hermes
def _hermes_python(inst: install.Installation) -> str:
    return str(inst.root / "venv" / "bin" / "python")


def hermes_seed(inst: install.Installation, home: Path, sid: str, messages: list[dict]) -> None:
    """What the adapter runs in the sandbox, run here: Hermes' own SessionDB writes the rows."""
    (home / "hermes").mkdir(parents=True, exist_ok=True)
    payload = hermes_session.seed_payload(sid, "/workspace", "m", messages)
    subprocess.run([_hermes_python(inst), "-c", hermes_session.SEED_SCRIPT], input=payload, check=True,
                   capture_output=True, env={"HERMES_HOME": str(home / "hermes"), "HOME": str(home), "PATH": "/usr/bin:/bin"})


def hermes_loads(inst: install.Installation, home: Path, sid: str) -> list[dict]:
    """The conversation Hermes itself restores on ``--resume`` (its own loader, as the CLI calls it)."""
    code = ("import json, os, sys\nfrom pathlib import Path\nfrom hermes_state import SessionDB\n"
            "db = SessionDB(Path(os.environ['HERMES_HOME']) / 'state.db')\n"
            "print(json.dumps(db.get_messages_as_conversation(sys.argv[1], repair_alternation=True)))\n")
    out = subprocess.run([_hermes_python(inst), "-c", code, sid], check=True, capture_output=True, text=True,
                         env={"HERMES_HOME": str(home / "hermes"), "HOME": str(home), "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout)


def test_hermes_reads_the_seeded_history_back_as_the_same_messages(tmp_path: Path) -> None:
    inst = _need("hermes")
    name = tool_namer(HERMES_TOOLS.to_neutral, "mcp__assay__")
    msgs = chat_messages(_history(), name)
    hermes_seed(inst, tmp_path, SID, msgs)
    restored = [m for m in hermes_loads(inst, tmp_path, SID) if m.get("role") != "session_meta"]
    assert [m["role"] for m in restored] == [m["role"] for m in msgs]
    calls = [c["function"]["name"] for m in restored for c in m.get("tool_calls") or []]
    assert calls == ["mcp__assay__ledger_record_entry", "terminal", "mcp__assay__ledger_amend_entry"]
    assert [m.get("tool_call_id") for m in restored if m["role"] == "tool"] == ["hist_001", "hist_002", "hist_005"]
    assert restored[-1]["content"].startswith("ERROR: not executed")  # the unproven claim comes back failed
    session = hermes_session.the_session(tmp_path, "check", SID, min_users=2)
    assert session["source"] == "tool" and session["message_count"] == len(msgs)
    assert [m["tool_name"] for m in session["messages"] if m["role"] == "tool"] == [
        "mcp__assay__ledger_record_entry", "terminal", "mcp__assay__ledger_amend_entry"]


def test_hermes_turn_mark_keeps_only_what_the_turn_added(tmp_path: Path) -> None:
    inst = _need("hermes")
    hermes_seed(inst, tmp_path, SID, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    before = hermes_session.mark_of(hermes_session.the_session(tmp_path, "t", SID))
    db = sqlite3.connect(tmp_path / hermes_session.STATE_DB)  # a turn: Hermes appends and counts tokens
    db.execute("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?, 'user', 'c', 1, 1)", (SID,))
    db.execute("INSERT INTO messages (session_id, role, content, timestamp, active) VALUES (?, 'assistant', 'd', 2, 1)", (SID,))
    db.execute("UPDATE sessions SET input_tokens = input_tokens + 120, output_tokens = output_tokens + 7")
    db.commit()
    db.close()
    turn = hermes_session.since(hermes_session.the_session(tmp_path, "t", SID), before)
    assert [m["content"] for m in turn["messages"]] == ["c", "d"]
    assert (turn["input_tokens"], turn["output_tokens"]) == (120, 7)


def test_hermes_store_replaced_by_a_link_to_a_valid_store_is_not_followed(tmp_path: Path) -> None:
    inst = _need("hermes")
    bait = tmp_path / "bait"
    hermes_seed(inst, bait, SID, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    assert hermes_session.the_session(bait, "control", SID, min_users=1)["id"] == SID  # a valid store, read
    home = tmp_path / "home"
    (home / "hermes").mkdir(parents=True)
    (home / hermes_session.STATE_DB).symlink_to(bait / hermes_session.STATE_DB)
    with pytest.raises(SessionLost, match="cannot be read safely"):
        hermes_session.the_session(home, "before turn 2", None, min_users=1)
    os.unlink(home / hermes_session.STATE_DB)
    (home / "hermes").rmdir()
    (home / "hermes").symlink_to(bait / "hermes")  # the folder on the way, too
    with pytest.raises(SessionLost, match="cannot be read safely"):
        hermes_session.the_session(home, "before turn 2", None, min_users=1)


def test_hermes_a_fresh_or_second_session_is_a_lost_session(tmp_path: Path) -> None:
    inst = _need("hermes")
    with pytest.raises(SessionLost, match="cannot be read safely"):  # no store at all
        hermes_session.the_session(tmp_path, "before turn 2", None, min_users=1)
    hermes_seed(inst, tmp_path, SID, [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}])
    with pytest.raises(SessionLost, match="holds 1 user message"):  # a session without the turns before
        hermes_session.the_session(tmp_path, "before turn 3", None, min_users=2)
    with pytest.raises(SessionLost, match="is not the one session"):  # the agent's own, not the seeded one
        hermes_session.the_session(tmp_path, "after turn 1", "another-id")
    hermes_seed(inst, tmp_path, "20261201_000000_abcdef", [{"role": "user", "content": "fresh"}])
    with pytest.raises(SessionLost, match="is not the one session"):
        hermes_session.the_session(tmp_path, "after turn 2", None)


# ---------------------------------------------------------------------------------------------- OpenClaw
def openclaw_import(inst: install.Installation, home: Path, sid: str, messages: list[dict]) -> subprocess.CompletedProcess:
    """What the adapter runs in the sandbox, run here: OpenClaw's own importer fills its store."""
    legacy = home / openclaw_session.LEGACY_DIR
    legacy.mkdir(parents=True, exist_ok=True)
    (legacy / f"{sid}.jsonl").write_text(seeded_session(sid, "/workspace", messages, model="m", provider="assay"))
    (legacy / "sessions.json").write_text(json.dumps(openclaw_session.legacy_store(sid, 1767225600000)))
    env = {"PATH": f"{inst.node_bin_dir}:/usr/bin:/bin", "HOME": str(home), "OPENCLAW_HOME": str(home / ".openclaw"),
           "OPENCLAW_STATE_DIR": str(home / "state"), "OPENCLAW_CONFIG_PATH": str(home / "openclaw.json"),
           "OPENCLAW_NO_AUTO_UPDATE": "1", "OPENCLAW_SKIP_CHANNELS": "1", "TMPDIR": str(home)}
    return subprocess.run([str(inst.bin), *openclaw_session.IMPORT_ARGS], env=env, capture_output=True, text=True,
                          timeout=300, cwd=home)


@pytest.fixture(scope="module")
def openclaw_store(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict]]:
    inst = _need("openclaw")
    home = tmp_path_factory.mktemp("oc")
    msgs = chat_messages(_history(), tool_namer(OPENCLAW_TOOLS.to_neutral, "assay__", dot="-"))
    res = openclaw_import(inst, home, SID, msgs)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads(res.stdout)["totals"]["importedTranscriptEvents"] == len(msgs) + 1  # the header too
    return home, msgs


@pytest.mark.slow
def test_openclaw_imports_the_history_as_its_own_session(openclaw_store) -> None:
    home, msgs = openclaw_store
    store = openclaw_session.check(home, SID, "after importing the history", min_users=2)
    stored = openclaw_session.messages(store)
    assert [m["role"] for m in stored] == ["user", "assistant", "toolResult", "assistant", "toolResult", "assistant",
                                           "user", "assistant", "toolResult"]
    calls = [b["name"] for m in stored for b in m.get("content") or [] if b.get("type") == "toolCall"]
    assert calls == ["assay__ledger-record_entry", "exec", "assay__ledger-amend_entry"]
    assert [m["isError"] for m in stored if m["role"] == "toolResult"] == [False, False, True]
    assert not list((home / openclaw_session.LEGACY_DIR).glob("*.jsonl"))  # imported, then archived by OpenClaw
    mark = openclaw_session.mark_of(store)
    assert openclaw_session.turn_events(store, mark) == []  # nothing after the mark: the history is not a turn


@pytest.mark.slow
def test_openclaw_store_replaced_by_a_link_to_a_valid_store_is_not_followed(openclaw_store, tmp_path: Path) -> None:
    bait, _ = openclaw_store
    home = tmp_path / "home"
    db = home / openclaw_session.AGENT_DB
    db.parent.mkdir(parents=True)
    db.symlink_to(bait / openclaw_session.AGENT_DB)
    with pytest.raises(SessionLost, match="cannot be read safely"):
        openclaw_session.check(home, SID, "before turn 2", min_users=1)
    shutil.rmtree(home / "state")
    (home / "state").symlink_to(bait / "state")
    with pytest.raises(SessionLost, match="cannot be read safely"):
        openclaw_session.check(home, SID, "before turn 2", min_users=1)
    with pytest.raises(SessionLost, match="cannot be read safely"):  # and gone altogether
        openclaw_session.check(tmp_path / "empty", SID, "before turn 2")


@pytest.mark.slow
def test_openclaw_a_fresh_or_other_session_is_a_lost_session(openclaw_store, tmp_path: Path) -> None:
    bait, _ = openclaw_store
    home = tmp_path / "home"
    shutil.copytree(bait / "state", home / "state")
    with pytest.raises(SessionLost, match="is not the one session"):  # the agent started another session
        openclaw_session.check(home, "11111111-2222-4333-8444-555555555555", "after turn 1")
    with pytest.raises(SessionLost, match="holds 2 user message"):
        openclaw_session.check(home, SID, "before turn 4", min_users=3)
    db = sqlite3.connect(home / openclaw_session.AGENT_DB)
    db.execute("UPDATE transcript_events SET session_id = 'other' WHERE seq = 0")
    db.commit()
    db.close()
    with pytest.raises(SessionLost, match="is not the one session"):
        openclaw_session.check(home, SID, "after turn 2")


@pytest.mark.slow
def test_openclaw_store_whose_transcript_is_a_view_is_not_run(openclaw_store, tmp_path: Path) -> None:
    """The agent's own SQL in the store (a view where the transcript should be) is never run by the check."""
    bait, _ = openclaw_store
    home = tmp_path / "home"
    shutil.copytree(bait / "state", home / "state")
    openclaw_session.check(home, SID, "control")  # the copy as OpenClaw left it is read
    db = sqlite3.connect(home / openclaw_session.AGENT_DB)
    db.execute("ALTER TABLE transcript_events RENAME TO kept")
    db.execute("CREATE VIEW transcript_events AS SELECT * FROM kept")
    db.commit()
    db.close()
    with pytest.raises(SessionLost, match="not a plain table"):
        openclaw_session.check(home, SID, "before turn 2")
