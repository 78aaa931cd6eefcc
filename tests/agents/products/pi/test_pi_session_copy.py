"""A copied second Pi session file is a lost session, not a plain failure: Pi may resume the stale
copy, so between turns two files carrying the session's id end the conversation as
`session_lost`, like a missing or a foreign session."""

from __future__ import annotations

import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest

from assay.agents.base import ConversationTurn, SessionLost
from assay.agents.products.pi.adapter import PiAgent
from assay.agents.products.pi.conversation import seeded_session, session_files_by_id

SID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    (home / "sessions").mkdir(parents=True)
    text = seeded_session(SID, "/workspace", [{"role": "user", "content": "Record 86 CNY."}], model="m", provider="p")
    (home / "sessions" / f"seed_{SID}.jsonl").write_text(text)
    return home


def test_one_session_file_continues_and_a_copy_is_a_lost_session(tmp_path: Path) -> None:
    home = _home(tmp_path)
    agent = PiAgent.__new__(PiAgent)  # check_session reads only ctx.home: no install needed
    ctx = SimpleNamespace(home=home)
    turn = ConversationTurn(number=2, session_id=SID)
    assert agent.check_session(ctx, turn, when="before") == SID
    shutil.copy(home / "sessions" / f"seed_{SID}.jsonl", home / "sessions" / "copy.jsonl")  # what the agent did
    assert sorted(session_files_by_id(home, "sessions/*.jsonl")[SID]) == ["sessions/copy.jsonl", f"sessions/seed_{SID}.jsonl"]
    with pytest.raises(SessionLost, match="is in 2 files"):
        agent.check_session(ctx, turn, when="after")
