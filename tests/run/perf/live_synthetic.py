"""A synthetic agent with a live mode that speaks Pi's RPC words (a subset): ``prompt`` with an
``id``, answered by a ``response``; ``agent_settled`` when done; ``get_state``. Over a planted
history it folds first (one summary request) and then asks its own. While it folds, a second
prompt is, by ``mode``:

- ``accept``: answered ``success: true`` after ``ack_delay_s`` and queued, asked after its own;
- ``refuse``: answered ``success: false`` ("compacting"), never asked;
- ``deaf``: not read at all until the work is done (one thread: the compaction blocks its input),
  then taken as a new prompt.

With ``fold`` off it never folds (its own request is its first).
"""

from __future__ import annotations

import json
from typing import Any

from assay.agents.base import AgentContext
from assay.agents.live import LiveInput
from assay.agents.products.pi.rpc import PiRpc
from tests.run.perf.synthetic import SyntheticAgent

LIVE = r"""
import json, os, sys, threading, time, urllib.request
cfg = json.loads(sys.argv[1])
lock = threading.Lock()
state = {"busy": False, "compacting": False, "queue": []}
path = os.path.join(cfg["home"], "session.jsonl")
history = len(open(path).read().splitlines()) if os.path.exists(path) else 0
def emit(obj):
    with lock:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()
def ask(text):
    req = urllib.request.Request(cfg["url"] + "/v1/chat/completions", method="POST",
        data=json.dumps({"model": cfg["model"], "messages": [{"role": "user", "content": text}]}).encode(),
        headers={"Authorization": "Bearer " + cfg["key"], "Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=300).read())["choices"][0]["message"]["content"]
def work(text):
    global history
    if history and cfg["fold"]:
        state["compacting"] = True
        ask("Summarize the conversation above.")
        state["compacting"] = False
        history = 0
    ask(text)
    while state["queue"]:
        ask(state["queue"].pop(0))
    state["busy"] = False
    emit({"type": "agent_settled"})
runner = None
for line in sys.stdin:
    cmd = json.loads(line)
    ref = cmd.get("id")
    if cmd["type"] == "get_state":
        emit({"id": ref, "type": "response", "command": "get_state", "success": True,
              "data": {"isStreaming": state["busy"], "isCompacting": state["compacting"],
                       "pendingMessageCount": len(state["queue"])}})
    elif cmd["type"] == "prompt" and state["busy"]:
        if cfg["mode"] == "refuse" and state["compacting"]:
            emit({"id": ref, "type": "response", "command": "prompt", "success": False, "error": "compacting"})
        else:
            time.sleep(cfg["ack_delay_s"])
            state["queue"].append(cmd["message"])
            emit({"id": ref, "type": "response", "command": "prompt", "success": True})
    elif cmd["type"] == "prompt":
        state["busy"] = True
        emit({"id": ref, "type": "response", "command": "prompt", "success": True})
        if cfg["mode"] == "deaf":
            work(cmd["message"])
        else:
            runner = threading.Thread(target=work, args=(cmd["message"],))
            runner.start()
if runner is not None:
    runner.join()
"""


class LiveSynthetic(SyntheticAgent):
    """A :class:`SyntheticAgent` (its one-shot turns) with a live mode that folds a planted history."""

    def __init__(self, name: str, mode: str, *, ack_delay_s: float = 0.0, fold: bool = True):
        super().__init__(name, fold_s=0.0 if fold else None)
        self.mode, self.ack_delay_s, self.fold = mode, ack_delay_s, fold

    def live_input(self, ctx: AgentContext) -> LiveInput:
        cfg: dict[str, Any] = {"home": ctx.home_inside, "url": ctx.gateway_url, "key": ctx.gateway_key,
                               "model": ctx.model, "mode": self.mode, "ack_delay_s": self.ack_delay_s,
                               "fold": self.fold}
        argv = ["/usr/bin/python3", "-S", "-u", "-c", LIVE, json.dumps(cfg)]
        return LiveInput(argv, {"PATH": "/usr/bin:/bin"}, PiRpc(), {"argv": argv[:4]})
