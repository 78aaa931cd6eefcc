"""Synthetic agents of known cost, to measure the measuring: one whose open time grows by a known
amount per history turn (it sleeps that long per line of its session before its first model
request), one that holds a known number of bytes more on each live turn of its session, one that
folds a planted history with one more request and a known pause before its own, one that prints
a banner and the model's answer. Each turn is one process in the sandbox, like the products' CLIs."""

from __future__ import annotations

import json
from typing import Any

from assay.agents.base import AgentAdapter, AgentContext, AgentInfo, AgentOutcome, ConversationTurn

#: runs inside the sandbox: read the session, wait, hold memory, one model request, one line more
SCRIPT = r"""
import json, os, sys, time, urllib.request
cfg = json.loads(sys.argv[1])
path = os.path.join(cfg["home"], "session.jsonl")
lines = open(path).read().splitlines() if os.path.exists(path) else []
history = sum(1 for l in lines if json.loads(l)["kind"] == "history")
live = sum(1 for l in lines if json.loads(l)["kind"] == "live") + 1
time.sleep(cfg["open_s_per_turn"] * history)
held = bytearray(cfg["leak_bytes_per_turn"] * live)
for i in range(0, len(held), 4096):
    held[i] = 1
def ask(text):
    req = urllib.request.Request(cfg["url"] + "/v1/chat/completions", method="POST",
        data=json.dumps({"model": cfg["model"], "messages": [{"role": "user", "content": text}]}).encode(),
        headers={"Authorization": "Bearer " + cfg["key"], "Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=60).read())["choices"][0]["message"]["content"]
if cfg["banner"]:
    print("synthetic agent starting", flush=True)
if history and cfg["fold_s"] is not None:  # fold the history first, then take that long to rewrite it
    summary = ask("Summarize the conversation above.")
    if cfg["print_answer"]:  # the summary is the same scripted text as the answer: not the first token
        print(summary, flush=True)
    time.sleep(cfg["fold_s"])
for _ in range(cfg["requests"]):
    answer = ask(cfg["prompt"])
if cfg["print_answer"]:
    print(answer, flush=True)
if cfg["title"]:  # a request after the turn's own (a session title), which is not folding
    ask("Write a short title for: " + cfg["prompt"])
with open(path, "a") as f:
    f.write(json.dumps({"kind": "live", "turn": live}) + "\n")
"""


class SyntheticAgent(AgentAdapter):
    kind = "synthetic"
    needs_gateway = True
    session_mechanism = "one JSONL file in the home, one line per turn"
    seeds_history = True

    def __init__(self, name: str, *, open_s_per_turn: float = 0.0, leak_bytes_per_turn: int = 0, requests: int = 1,
                 fold_s: float | None = None, banner: bool = False, print_answer: bool = False, title: bool = False):
        super().__init__({})
        self.fold_s, self.banner, self.print_answer, self.title = fold_s, banner, print_answer, title
        self.name = name
        self.open_s_per_turn = open_s_per_turn
        self.leak_bytes_per_turn = leak_bytes_per_turn
        self.requests = requests

    def info(self) -> AgentInfo:
        return AgentInfo(self.name, self.kind, "1")

    async def seed_session(self, ctx: AgentContext, turn: ConversationTurn) -> None:
        with open(ctx.home / "session.jsonl", "a") as f:
            for _ in turn.history:
                f.write(json.dumps({"kind": "history"}) + "\n")

    async def run_turn(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        if turn.number == 1 and turn.history:
            await self.seed_session(ctx, turn)
        return await self.run(ctx)

    async def run(self, ctx: AgentContext, since: Any = None) -> AgentOutcome:
        cfg = {"home": ctx.home_inside, "open_s_per_turn": self.open_s_per_turn, "url": ctx.gateway_url,
               "leak_bytes_per_turn": self.leak_bytes_per_turn, "key": ctx.gateway_key, "model": ctx.model,
               "requests": self.requests, "prompt": ctx.prompt, "fold_s": self.fold_s, "banner": self.banner,
               "print_answer": self.print_answer, "title": self.title}
        res = await ctx.sandbox.exec(["/usr/bin/python3", "-S", "-c", SCRIPT, json.dumps(cfg)],
                                     env={"PATH": "/usr/bin:/bin"}, timeout_s=ctx.timeout_s)
        return AgentOutcome(exit_code=res.exit_code, timed_out=res.timed_out, stdout=res.stdout, stderr=res.stderr)
