"""The files a conversation writes into an agent home the agent has been in, and reads back from
it: new files only, never through a planted link; Pi's seeded session is Pi's own format; the
session a turn continues is found without following a link."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assay.agents.history import chat_messages
from assay.agents.products.normalized import read_jsonl
from assay.agents.products.pi.conversation import seeded_session, session_ids
from assay.agents.products.pi.session_format import PI_TOOLS, normalize_messages, session_messages
from assay.spec.conversation import ConversationSpec
from assay.trace.events import EventKind
from assay.untrusted import files as safe_files


def test_write_new_creates_files_and_folders_inside_the_home(tmp_path: Path) -> None:
    safe_files.write_new(tmp_path, "conv/t1/prompt.md", b"hello")
    assert (tmp_path / "conv/t1/prompt.md").read_bytes() == b"hello"
    safe_files.write_new(tmp_path, "conv/t1/config.json", b"{}")  # an existing real folder is fine
    assert sorted(p.name for p in (tmp_path / "conv/t1").iterdir()) == ["config.json", "prompt.md"]


def test_write_new_never_writes_through_a_planted_file_link(tmp_path: Path) -> None:
    home, victim = tmp_path / "home", tmp_path / "victim.txt"
    home.mkdir()
    victim.write_text("host file")
    (home / "prompt.md").symlink_to(victim)
    with pytest.raises(safe_files.Unsafe, match="already exists"):
        safe_files.write_new(home, "prompt.md", b"overwrite")
    assert victim.read_text() == "host file"


def test_write_new_never_enters_a_planted_folder_link(tmp_path: Path) -> None:
    home, outside = tmp_path / "home", tmp_path / "outside"
    (home / "conv").mkdir(parents=True)
    outside.mkdir()
    (home / "conv" / "t2").symlink_to(outside)
    with pytest.raises(safe_files.Unsafe, match="link or not a directory"):
        safe_files.write_new(home, "conv/t2/prompt.md", b"x")
    assert list(outside.iterdir()) == []


def test_write_new_refuses_a_path_out_of_the_home(tmp_path: Path) -> None:
    with pytest.raises(safe_files.Unsafe):
        safe_files.write_new(tmp_path, "../escape.txt", b"x")
    assert not (tmp_path.parent / "escape.txt").exists()


def _history() -> tuple:
    return tuple(ConversationSpec.model_validate({"history": [
        {"type": "user", "text": "book it"},
        {"type": "tool", "name": "ledger.record_entry", "arguments": {"amount": 5}, "result": {"id": "e3"}},
        {"type": "tool", "name": "shell", "arguments": {"command": "ls"}, "result": "a.txt"},
        {"type": "claim", "text": "Already recorded.", "name": "ledger.record_entry", "arguments": {"amount": 9}},
        {"type": "agent", "text": "ok"}], "turns": [{"user": "x"}]}).history)


def test_pi_seeded_session_reads_back_through_pis_own_normalizer(tmp_path: Path) -> None:
    names = {"shell": "bash"}
    msgs = chat_messages(_history(), lambda n: names.get(n, "mcp__assay__" + n.replace(".", "_")))
    text = seeded_session("sid-1", "/workspace", msgs, model="m", provider="assay")
    entries = read_jsonl(text)
    assert entries[0] == {"type": "session", "version": 3, "id": "sid-1", "timestamp": "2026-01-01T00:00:00.000Z",
                          "cwd": "/workspace"}
    body = entries[1:]
    assert [e["parentId"] for e in body[1:]] == [e["id"] for e in body[:-1]]  # one chain, as Pi writes it
    items = normalize_messages(session_messages(entries), PI_TOOLS)
    calls = [i.data for i in items if i.kind == EventKind.tool_call]
    results = [i.data for i in items if i.kind == EventKind.tool_result]
    assert [c["name"] for c in calls] == ["mcp__assay__ledger_record_entry", "shell", "mcp__assay__ledger_record_entry"]
    assert [r["ok"] for r in results] == [True, True, False]  # the claim's call came back failed
    roles = [e["message"]["role"] for e in body]
    assert roles == ["user", "assistant", "toolResult", "assistant", "toolResult", "assistant", "toolResult", "assistant"]


def test_session_ids_read_headers_without_following_links(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    (home / "sessions" / "a_sid-1.jsonl").write_text(json.dumps({"type": "session", "id": "sid-1"}) + "\n")
    outside = tmp_path / "forged.jsonl"
    outside.write_text(json.dumps({"type": "session", "id": "sid-forged"}) + "\n")
    (home / "sessions" / "b_forged.jsonl").symlink_to(outside)
    os.mkfifo(home / "sessions" / "c_fifo.jsonl")  # a reader that opened this would block forever
    (home / "sessions" / "d_noheader.jsonl").write_text(json.dumps({"type": "message"}) + "\n")
    assert session_ids(home, "sessions/*.jsonl") == {"sid-1"}
