"""Which session a restarted agent continues is read from files the agent wrote: hostile. A link
or special file refuses the resume (never followed), a huge file is never read past its first
line's limit, a malformed or ambiguous session refuses it; each refusal says why (fresh restart)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from assay.agents.base import RESUME_NOTE, Resume
from assay.agents.products.pi.conversation import HEAD_BYTES, resumable
from assay.agents.reference.adapter import MESSAGES_FILE, resume_from
from assay.untrusted import files as safe_files

PATTERN = "sessions/*.jsonl"
SID = "01a22e57-e877-706f-9163-73e50d67f08e"


def header(sid: str = SID) -> str:
    return json.dumps({"type": "session", "version": 3, "id": sid, "cwd": "/workspace"}) + "\n"


@pytest.fixture
def home(tmp_path: Path) -> Path:
    h = tmp_path / "home"
    (h / "sessions").mkdir(parents=True)
    return h


def test_the_one_session_is_resumed(home: Path) -> None:
    (home / "sessions" / f"2026_{SID}.jsonl").write_text(header() + '{"type":"message"}\n')
    assert resumable(home, PATTERN) == (SID, "")


def test_a_huge_session_is_resumed_from_its_first_line_alone(home: Path) -> None:
    path = home / "sessions" / f"2026_{SID}.jsonl"
    path.write_text(header())
    os.truncate(path, 8 << 30)  # 8 GiB (sparse): never read whole
    assert resumable(home, PATTERN) == (SID, "")


@pytest.mark.parametrize("plant, why", [
    (lambda s, secret: (s / "a.jsonl").symlink_to(secret), "link"),
    (lambda s, secret: os.mkfifo(s / "a.jsonl"), "special file"),
    (lambda s, secret: (s.rmdir(), s.symlink_to(secret.parent)), "link"),
    (lambda s, secret: (s / "a.jsonl").write_text("{" + " " * HEAD_BYTES + "\n"), "longer than"),
    (lambda s, secret: (s / "a.jsonl").write_text("not json\n"), "not JSON"),
    (lambda s, secret: (s / "a.jsonl").write_text(header("--exec=evil") ), "plain id"),
    (lambda s, secret: (s / "a.jsonl").write_text(header("a b")), "plain id"),
    (lambda s, secret: (s / "a.jsonl").write_text('{"type": "message", "id": "x"}\n'), "plain id"),
    (lambda s, secret: [(s / f"{n}.jsonl").write_text(header()) for n in "ab"], "2 session files"),
    (lambda s, secret: None, "no session file"),
])
def test_a_hostile_or_unclear_session_is_never_resumed(home: Path, tmp_path: Path, plant, why: str) -> None:
    secret = tmp_path / "host" / "secret.jsonl"
    secret.parent.mkdir()
    secret.write_text(header("HOST-SECRET-ID"))
    plant(home / "sessions", secret)
    sid, reason = resumable(home, PATTERN)
    assert sid is None and why in reason, reason
    assert "HOST-SECRET-ID" not in reason


def test_the_reference_resumes_the_list_the_killed_run_kept(tmp_path: Path) -> None:
    (tmp_path / MESSAGES_FILE).write_text("[]")
    assert resume_from(tmp_path, 2) == Resume(session=MESSAGES_FILE, note=RESUME_NOTE)
    (tmp_path / "runs" / "r2").mkdir(parents=True)
    (tmp_path / "runs" / "r2" / MESSAGES_FILE).write_text("[]")
    assert resume_from(tmp_path, 3) == Resume(session=f"runs/r2/{MESSAGES_FILE}", note=RESUME_NOTE)


@pytest.mark.parametrize("plant, why", [
    (lambda h, secret: (h / MESSAGES_FILE).symlink_to(secret), "a link or not a file"),
    (lambda h, secret: os.mkfifo(h / MESSAGES_FILE), "a link or not a file"),
    (lambda h, secret: (h / MESSAGES_FILE).mkdir(), "a link or not a file"),
    (lambda h, secret: None, "missing"),
    (lambda h, secret: ((h / MESSAGES_FILE).write_text("["), os.truncate(h / MESSAGES_FILE, safe_files.MAX_BYTES + 1)),
     "larger than"),
])
def test_the_reference_never_resumes_a_planted_list(tmp_path: Path, plant, why: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    secret = tmp_path / "secret.json"
    secret.write_text("[]")
    plant(home, secret)
    how = resume_from(home, 2)
    assert isinstance(how, str) and why in how, how


def test_a_runs_folder_planted_as_a_link_is_not_followed(tmp_path: Path) -> None:
    home, elsewhere = tmp_path / "home", tmp_path / "elsewhere"
    (elsewhere / "r2").mkdir(parents=True)
    (elsewhere / "r2" / MESSAGES_FILE).write_text("[]")
    home.mkdir()
    (home / "runs").symlink_to(elsewhere)
    assert isinstance(resume_from(home, 3), str)
