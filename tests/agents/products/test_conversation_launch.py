"""How Hermes and OpenClaw are started for a conversation turn (no agent runs here): each turn
goes through the product's own session mechanism, the prompt never lands in a file the agent
could have planted, and OpenClaw's embedded turn gets the config ``agent exec`` would compose."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import yaml

from assay.agents.base import ConversationTurn
from assay.agents.products.hermes.adapter import HermesAgent
from assay.agents.products.openclaw.adapter import OpenClawAgent
from assay.spec.conversation import ConversationSpec
from tests.agents.products.test_config import fake_install, make_ctx, no_key_in_files

SID = "0a1b2c3d-4e5f-4a6b-8c7d-8e9fa0b1c2d3"
HISTORY = tuple(ConversationSpec.model_validate({"history": [{"type": "user", "text": "hi"}],
                                                 "turns": [{"user": "x"}]}).history)


def _turn(ctx, number: int, *, history: tuple = (), native: str | None = None):
    turn = ConversationTurn(number=number, session_id=SID, history=history, native_session=native)
    return dataclasses.replace(ctx, turn=turn, prompt="-rf looks like a flag"), turn


def test_hermes_turns_are_chat_queries_resuming_the_session(tmp_path: Path) -> None:
    ctx, _ = _turn(make_ctx(tmp_path, tools=["shell"]), 1)
    argv = HermesAgent().prepare(ctx, fake_install(tmp_path, "hermes")).argv
    assert argv[1:4] == ["chat", "--query=-rf looks like a flag", "-Q"]  # a prompt never read as an option
    assert "--resume" not in argv and "-z" not in argv and "--usage-file" not in argv
    assert {"--source", "tool", "--yolo", "--no-restore-cwd", "--ignore-rules"} <= set(argv)
    ctx1, _ = _turn(ctx, 1, history=HISTORY)  # turn 1 over a replayed history: the seeded session
    argv1 = HermesAgent().prepare(ctx1, fake_install(tmp_path, "hermes")).argv
    assert argv1[argv1.index("--resume") + 1] == SID
    ctx2, _ = _turn(ctx, 2, native="20261201_000000_abcdef")  # later turns: the session turn 1 made
    launch = HermesAgent().prepare(ctx2, fake_install(tmp_path, "hermes"))
    assert launch.argv[launch.argv.index("--resume") + 1] == "20261201_000000_abcdef"
    assert "--query=<message>" in launch.config["argv"] and "-rf looks like a flag" not in json.dumps(launch.config)
    cfg = yaml.safe_load((ctx.home / "hermes/config.yaml").read_text())
    assert cfg["approvals"]["mode"] == "off" and not cfg["memory"]["memory_enabled"]
    # no update check: Hermes' own cache of it says "up to date" for this version
    cache = json.loads((ctx.home / "hermes/.update_check").read_text())
    assert cache["behind"] == 0 and cache["ver"] == "1.0" and cache["rev"] is None
    no_key_in_files(ctx.home)


def test_single_turn_hermes_is_still_one_shot(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, tools=["shell"])
    argv = HermesAgent().prepare(ctx, fake_install(tmp_path, "hermes")).argv
    assert argv[1:3] == ["-z", ctx.prompt] and "--usage-file" in argv and "chat" not in argv


def test_openclaw_turns_are_embedded_turns_of_the_named_session(tmp_path: Path) -> None:
    ctx, _ = _turn(make_ctx(tmp_path, tools=["shell", "read"]), 2)
    launch = OpenClawAgent().prepare(ctx, fake_install(tmp_path, "openclaw"))
    argv = launch.argv
    assert argv[1:5] == ["agent", "--local", "--session-id", SID] and "exec" not in argv
    assert argv[-1] == "--message=-rf looks like a flag" and not (ctx.home / "prompt.md").exists()
    assert launch.env["OPENCLAW_STATE_DIR"] == "/assay/home/state"
    assert launch.env["OPENCLAW_CONFIG_PATH"] == "/assay/home/openclaw.json"
    cfg = json.loads((ctx.home / "openclaw.json").read_text())
    # what agent exec would have merged in: no bootstrap files in the workspace, no agent sandbox,
    # file tools held to the workspace, no login-shell env; the task's tool contract still wins
    assert cfg["agents"]["defaults"]["skipBootstrap"] is True
    assert cfg["agents"]["defaults"]["workspace"] == ctx.sandbox.workspace_path
    assert cfg["agents"]["defaults"]["sandbox"] == {"mode": "off"} and cfg["env"]["shellEnv"]["enabled"] is False
    assert cfg["tools"]["fs"] == {"workspaceOnly": True} and cfg["tools"]["exec"] == {"mode": "full"}
    assert cfg["tools"]["allow"] == ["exec", "process", "read"] and "tool_search" in cfg["tools"]["deny"]
    assert cfg["agents"]["defaults"]["model"] == {"primary": "assay/scripted"}
    assert launch.config["openclaw.json"]["agents"]["defaults"]["skipBootstrap"] is True
    no_key_in_files(ctx.home)


def test_single_turn_openclaw_is_still_agent_exec(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path, tools=["shell"])
    launch = OpenClawAgent().prepare(ctx, fake_install(tmp_path, "openclaw"))
    assert launch.argv[1:3] == ["agent", "exec"] and (ctx.home / "prompt.md").read_text() == ctx.prompt
    assert "OPENCLAW_STATE_DIR" not in launch.env
    assert "skipBootstrap" not in json.dumps(json.loads((ctx.home / "openclaw.json").read_text()))


def test_openclaw_local_envelope_gives_the_final_answer_and_its_facts(tmp_path: Path) -> None:
    ctx, _ = _turn(make_ctx(tmp_path, tools=["shell"]), 1)
    out = {"payloads": [{"text": "Booked.", "mediaUrl": None}, {"text": "Anything else?"}],
           "meta": {"aborted": False, "stopReason": "stop", "agentMeta": {"sessionId": SID, "assistantTurns": 2}}}
    stdout = b"[plugins] a diagnostic line\n" + json.dumps(out, indent=2).encode()
    final, facts = OpenClawAgent().completion(ctx, stdout)
    assert final == "Booked.\n\nAnything else?"
    assert facts == {"aborted": False, "stopReason": "stop", "assistantTurns": 2, "costUsd": None, "sessionId": SID}
    final, facts = OpenClawAgent().completion(ctx, b'{"payloads": [], "meta": {"aborted": true}}')
    assert final is None and facts["aborted"] is True
