"""Pi's RPC mode, as the live measurement starts and speaks it: the same configuration as its
one-shot turns (telemetry and update checks off, the controlled flags, the gateway only), the
mode flags instead of ``-p --mode json``, no prompt on the command line, and the protocol's
commands and responses in Pi's own words (docs/rpc.md, docs/rpc-commands.md of Pi 1.6.0)."""

from __future__ import annotations

import json
from pathlib import Path

from assay.agents.products.pi.adapter import PiAgent
from assay.agents.products.pi.rpc import PiRpc
from tests.agents.products.test_config import fake_install, make_ctx


def test_the_rpc_launch_is_the_one_shot_configuration_in_rpc_mode(tmp_path: Path) -> None:
    ctx = make_ctx(tmp_path)
    inst = fake_install(tmp_path, "pi")
    once = PiAgent().prepare(ctx, inst)
    live = PiAgent().prepare(ctx, inst, rpc=True)
    assert live.argv[1:3] == ["--mode", "rpc"] and "-p" not in live.argv and "json" not in live.argv
    assert ctx.prompt not in live.argv and "--" not in live.argv  # the messages come on stdin
    assert [a for a in once.argv if a not in ("-p", "json", "--", ctx.prompt)] == \
        [a for a in live.argv if a != "rpc"]  # every other flag the same: --offline, the controlled ones
    assert "--offline" in live.argv
    assert {k: live.env[k] for k in ("PI_OFFLINE", "PI_TELEMETRY", "PI_SKIP_VERSION_CHECK")} == \
        {"PI_OFFLINE": "1", "PI_TELEMETRY": "0", "PI_SKIP_VERSION_CHECK": "1"}


def test_the_commands_and_responses_are_pis_own() -> None:
    rpc = PiRpc()
    first, during = json.loads(rpc.prompt("hi", "a")), json.loads(rpc.during("more", "b"))
    assert first == {"id": "a", "type": "prompt", "message": "hi"}
    assert during == {"id": "b", "type": "prompt", "message": "more", "streamingBehavior": "followUp"}
    assert rpc.prompt("x", "a").endswith(b"\n") and rpc.prompt("x", "a").count(b"\n") == 1  # one JSONL record
    queued = {"id": "b", "type": "response", "command": "prompt", "success": True, "data": {"disposition": "queued"}}
    ok, shown = rpc.response(queued, "b")
    assert ok and '"disposition": "queued"' in shown
    assert rpc.response(queued, "a") is None  # another command's
    refused = {"id": "b", "type": "response", "command": "prompt", "success": False, "error": "Cannot submit"}
    assert rpc.response(refused, "b") == (False, json.dumps({"command": "prompt", "success": False,
                                                             "error": "Cannot submit"}))
    assert rpc.settled({"type": "agent_settled"}) and not rpc.settled({"type": "agent_end"})
    busy = {"id": "s", "type": "response", "command": "get_state", "success": True,
            "data": {"isStreaming": False, "isCompacting": False, "pendingMessageCount": 1}}
    assert not rpc.idle(busy)
    busy["data"]["pendingMessageCount"] = 0
    assert rpc.idle(busy)
