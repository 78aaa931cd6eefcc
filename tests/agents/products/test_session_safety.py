"""Host-side readers of the agents' native files treat the agent home as hostile: a link the
agent planted (to a host file or a host folder) is never followed, nothing is written into the
home, and exports land in the attempt folder. Each case has a control: the same session as a
real file is read, so an empty read below is the defence, not a broken reader."""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.agents.products.dsh.adapter import DshAgent
from assay.agents.products.hermes.adapter import HermesAgent
from assay.agents.products.normalized import read_jsonl
from assay.agents.products.openclaw.adapter import OpenClawAgent
from assay.agents.products.pi.adapter import PiAgent
from assay.untrusted import files as safe_files
from tests.agents.products.test_config import make_ctx
from tests.agents.products.test_normalizers import FIX, make_openclaw_db, make_state_db


def pi_session(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIX / "pi/session.jsonl", target)


def openclaw_session(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    make_openclaw_db(target, compress=False)
    db = sqlite3.connect(target)  # the real store checks its JSON in the schema itself
    db.execute("CREATE TABLE checked (doc TEXT CHECK (json_valid(doc)))")
    db.commit()
    db.close()


def hermes_session(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    make_state_db(target, read_jsonl((FIX / "hermes/sessions-export.jsonl").read_text())[0])


def dsh_session(target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(FIX / "dsh/session.v4.jsonl", target)


# adapter, where its session lives in the home, how to make one, the names older code exported into the home
ADAPTERS: dict[str, tuple[type, str, Callable[[Path], None], list[str]]] = {
    "pi": (PiAgent, "sessions/s1.jsonl", pi_session, []),
    "openclaw": (OpenClawAgent, "state/agents/main/agent/openclaw-agent.sqlite", openclaw_session,
                 ["openclaw.main.transcript.jsonl", "openclaw.main.runtime.jsonl"]),
    "hermes": (HermesAgent, "hermes/state.db", hermes_session, ["hermes.sessions.jsonl"]),
    "dsh": (DshAgent, "dsh/sessions/p/s1/session.v4.jsonl", dsh_session, ["dsh.session.v4.jsonl"]),
}


def adapter(name: str, tmp_path: Path):
    cls, rel, make, old_exports = ADAPTERS[name]
    ctx = make_ctx(tmp_path)
    (tmp_path / "attempt").mkdir()
    ctx.attempt_dir = tmp_path / "attempt"
    agent = cls.__new__(cls)  # readers need no installation
    return agent, ctx, rel, make, old_exports


def read_all(agent, ctx) -> tuple[list, dict[str, Path]]:
    return agent.read_session(ctx, b""), agent.native_files(ctx)


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_real_session_is_read_and_exported_outside_the_home(name: str, tmp_path: Path) -> None:
    agent, ctx, rel, make, _ = adapter(name, tmp_path)
    make(ctx.home / rel)
    before = sorted(p.relative_to(ctx.home).as_posix() for p in ctx.home.rglob("*"))
    items, native = read_all(agent, ctx)
    assert items and native, "control: a real session must be read"
    assert all(p.is_relative_to(ctx.attempt_dir) for p in native.values())
    assert sorted(p.relative_to(ctx.home).as_posix() for p in ctx.home.rglob("*")) == before  # nothing written


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_session_file_linked_to_a_host_file_is_not_followed(name: str, tmp_path: Path) -> None:
    agent, ctx, rel, make, _ = adapter(name, tmp_path)
    host = tmp_path / "host" / "secret-session"
    make(host)
    before = host.read_bytes()
    (ctx.home / rel).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(host, ctx.home / rel)
    items, native = read_all(agent, ctx)
    assert items == [] and native == {}
    assert host.read_bytes() == before


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_folder_linked_out_of_the_home_is_not_entered(name: str, tmp_path: Path) -> None:
    agent, ctx, rel, make, _ = adapter(name, tmp_path)
    first = rel.split("/")[0]
    host_dir = tmp_path / "host-dir"
    make(host_dir / rel)  # a complete session, reachable only through the link
    os.symlink(host_dir / first, ctx.home / first)
    items, native = read_all(agent, ctx)
    assert items == [] and native == {}


@pytest.mark.parametrize("name", [n for n in sorted(ADAPTERS) if ADAPTERS[n][3]])
def test_export_names_planted_as_links_do_not_overwrite_host_files(name: str, tmp_path: Path) -> None:
    agent, ctx, rel, make, old_exports = adapter(name, tmp_path)
    make(ctx.home / rel)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious host data")
    for export in old_exports:
        os.symlink(victim, ctx.home / export)
    items, native = read_all(agent, ctx)
    assert items and native
    assert victim.read_text() == "precious host data"
    assert all(not p.is_symlink() and p.is_relative_to(ctx.attempt_dir) for p in native.values())


def test_hermes_usage_file_linked_to_a_host_secret_is_not_read_or_copied(tmp_path: Path) -> None:
    agent, ctx, _, _, _ = adapter("hermes", tmp_path)
    secret = tmp_path / "secret.json"
    secret.write_text('{"session_id": "HOST-SECRET-42", "api_calls": 7}')
    os.symlink(secret, ctx.home / "usage.json")
    _, facts = agent.completion(ctx, b"")
    assert "HOST-SECRET-42" not in repr(facts)
    assert "hermes.usage.json" not in agent.native_files(ctx)
    (ctx.home / "usage.json").unlink()
    shutil.copy(secret, ctx.home / "usage.json")  # control: a real usage file is read
    assert agent.completion(ctx, b"")[1]["api_calls"] == 7


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_fifo_in_place_of_the_session_does_not_block(name: str, tmp_path: Path) -> None:
    agent, ctx, rel, _, _ = adapter(name, tmp_path)
    (ctx.home / rel).parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(ctx.home / rel)
    items, native = read_all(agent, ctx)  # a blocking open would never return
    assert items == [] and native == {}


def test_safe_reads_refuse_paths_out_of_the_home(tmp_path: Path) -> None:
    (tmp_path / "home").mkdir()
    (tmp_path / "outside.txt").write_text("x")
    for rel in ("../outside.txt", "/etc/passwd", ""):
        with pytest.raises(safe_files.Unsafe):
            safe_files.read_bytes(tmp_path / "home", rel)
    with pytest.raises(ValueError):
        safe_files.export_path(tmp_path, "../escape")


@pytest.mark.parametrize("name", sorted(ADAPTERS))
def test_a_planted_link_is_reported_as_a_fact_for_the_incident(name: str, tmp_path: Path) -> None:
    agent, ctx, rel, make, _ = adapter(name, tmp_path)
    host = tmp_path / "host-secret"
    make(host)
    (ctx.home / rel).parent.mkdir(parents=True, exist_ok=True)
    _, clean = agent.completion(ctx, b"")
    assert safe_files.TRAPS not in clean  # control: nothing planted, nothing reported
    os.symlink(host, ctx.home / rel)
    _, facts = agent.completion(ctx, b"")
    assert facts[safe_files.TRAPS] == [{"path": rel, "kind": "symlink", "target": str(host)}]
