"""The ``reference`` agent: assay's own plain tool-calling loop, the baseline for every suite.

The adapter writes a config into the agent's fresh home and runs
``python -m assay.agents.reference.loop`` inside the sandbox, so every tool executes there, in
the workspace. Model calls go through the gateway (which records them); the loop's own session
file is mapped here onto ``tool_call`` / ``tool_result`` / ``log`` trace events.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import assay
from assay.agents.base import (RESUME_NOTE, AgentAdapter, AgentContext, AgentInfo, AgentOutcome, ConversationTurn,
                               Normalized, Resume, SessionLost)
from assay.agents.history import chat_messages
from assay.agents.products.normalized import read_jsonl
from assay.agents.reference.tools import BUILTIN_SCHEMAS
from assay.harness.wiring import function_name
from assay.records.results import UsageTotals
from assay.sandbox.base import Mount
from assay.spec.env_settings import env_number
from assay.spec.load import LoadedTask
from assay.trace.events import EventKind
from assay.untrusted import files as safe_files

SESSION_FILE = "reference-session.jsonl"
CONFIG_FILE = "reference.json"
MESSAGES_FILE = "messages.json"  # the loop's message list, rewritten after every step


def _runtime_mounts() -> list[Mount]:
    """Read-only paths the loop needs inside an isolated sandbox: the interpreter and assay itself."""
    paths = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(assay.__file__).resolve().parent.parent}
    return [Mount(p, str(p)) for p in sorted(paths) if p.exists() and not str(p).startswith(("/usr", "/bin", "/lib"))]


#: loop settings that may be overridden from the environment (recorded in the manifest via info())
ENV_SETTINGS = {"request_timeout_s": "ASSAY_REFERENCE_REQUEST_TIMEOUT_S", "max_retries": "ASSAY_REFERENCE_MAX_RETRIES",
                "retry_base_s": "ASSAY_REFERENCE_RETRY_BASE_S", "retry_max_s": "ASSAY_REFERENCE_RETRY_MAX_S"}
DEFAULTS = {"request_timeout_s": 60.0, "max_retries": 6, "retry_base_s": 0.5, "retry_max_s": 10.0}
#: what each setting may be (``env_number``'s bounds): a value outside is refused before the run
BOUNDS: dict[str, dict[str, Any]] = {"request_timeout_s": {"above": 0}, "max_retries": {"whole": True, "minimum": 0},
                                     "retry_base_s": {"minimum": 0}, "retry_max_s": {"minimum": 0}}


class ReferenceAgent(AgentAdapter):
    name = "reference"
    kind = "reference"
    needs_gateway = True
    session_mechanism = "its own message list, conv/tN/messages.json in the agent home, read back by the loop"
    seeds_history = True
    fresh_steps = False  # its home keeps its sessions: a fresh start there per step is not checked yet
    resume_mechanism = ("its own message list (messages.json, rewritten after every step) continued by the loop "
                        "after a kill; a call left without its answer is closed with an error result")

    def __init__(self, config: dict[str, Any] | None = None):
        super().__init__(config)
        for key, var in ENV_SETTINGS.items():
            value = env_number(var, None, **BOUNDS[key])
            if key not in self.config and value is not None:  # a bad value is refused even when unused
                self.config[key] = value
        self.config = {**DEFAULTS, **self.config}

    def info(self) -> AgentInfo:
        return AgentInfo(self.name, self.kind, assay.__version__,
                         config={"tools": sorted(BUILTIN_SCHEMAS), "wire": "openai-chat", **self.config})

    def unsupported_reason(self, task: LoadedTask) -> str | None:
        unknown = sorted(t for t in task.spec.tools if t not in BUILTIN_SCHEMAS and "." not in t)
        return f"unsupported: tools {unknown} not offered by reference" if unknown else None

    def mounts(self, task: LoadedTask) -> list[Mount]:
        return _runtime_mounts()

    def _config(self, ctx: AgentContext, folder: str) -> dict[str, Any]:
        return {"gateway_url": ctx.gateway_url or "", "model": ctx.model, "tools": list(ctx.tools),
                "prompt_file": f"{ctx.home_inside}/{folder}prompt.md",
                "session_file": f"{ctx.home_inside}/{folder}{SESSION_FILE}",
                "messages_out": f"{ctx.home_inside}/{folder}{MESSAGES_FILE}",
                "max_turns": ctx.budget.turns, "max_tool_calls": ctx.budget.tool_calls,
                **{k: self.config[k] for k in DEFAULTS}}

    async def run(self, ctx: AgentContext) -> AgentOutcome:
        if ctx.agent_run > 1:
            return await self._restart(ctx)
        (ctx.home / "prompt.md").write_text(ctx.prompt)
        (ctx.home / CONFIG_FILE).write_text(json.dumps({**self._config(ctx, ""), "every_step": True}, indent=1))
        return await self._exec(ctx, CONFIG_FILE, SESSION_FILE)

    async def _restart(self, ctx: AgentContext) -> AgentOutcome:
        """A run after a process fault. The agent has been in its home: nothing is written there
        (a planted link would redirect the write); the config and the prompt come on stdin, and
        the loop writes its own files under ``runs/rN/``. Resumed: it continues the killed run's
        message list (:meth:`resume_point`)."""
        folder = _run_folder(ctx.agent_run)
        cfg = {**self._config(ctx, folder), "prompt": ctx.prompt, "every_step": True}
        del cfg["prompt_file"]
        if ctx.resume is not None:
            cfg["history_file"] = f"{ctx.home_inside}/{ctx.resume.session}"
        return await self._exec(ctx, None, f"{folder}{SESSION_FILE}", name=f"r{ctx.agent_run}",
                                stdin=json.dumps(cfg).encode())

    def resume_point(self, ctx: AgentContext) -> Resume | str:
        return resume_from(ctx.home, ctx.agent_run)

    async def run_turn(self, ctx: AgentContext, turn: ConversationTurn) -> AgentOutcome:
        """Turn N reads the messages turn N-1 left (turn 1: the typed history as chat messages).
        Every file of a turn is new, written without following a link (the agent has been here)."""
        folder = f"conv/t{turn.number}/"
        cfg = self._config(ctx, folder)
        fed: dict[str, Path] = {}
        try:
            if turn.number == 1:
                named = lambda n: n if n in BUILTIN_SCHEMAS else function_name(n)  # noqa: E731
                history = json.dumps(chat_messages(turn.history, named), ensure_ascii=False).encode()
                safe_files.write_new(ctx.home, f"{folder}history.json", history)
                fed["reference-history"] = safe_files.write_export(_aside(ctx), "reference-history.json", history)
                cfg["history_file"] = f"{ctx.home_inside}/{folder}history.json"
            else:
                before = f"conv/t{turn.number - 1}/messages.json"
                if not safe_files.is_file(ctx.home, before):
                    raise SessionLost(f"turn {turn.number - 1} left no conversation to continue ({before} is "
                                      "missing, or a link)")
                cfg["history_file"] = f"{ctx.home_inside}/{before}"
            safe_files.write_new(ctx.home, f"{folder}prompt.md", ctx.prompt.encode())
            safe_files.write_new(ctx.home, f"{folder}{CONFIG_FILE}", json.dumps(cfg, indent=1).encode())
        except safe_files.Unsafe as e:  # the agent planted something where this turn's files go
            raise SessionLost(f"turn {turn.number}: {e}") from None
        outcome = await self._exec(ctx, f"{folder}{CONFIG_FILE}", f"{folder}{SESSION_FILE}", name=f"t{turn.number}")
        if fed:
            outcome = dataclasses.replace(outcome, native_files={**outcome.native_files, **fed})
        if (outcome.extra.get("stop") or {}).get("reason") == "session_lost":
            raise SessionLost(f"turn {turn.number}: {outcome.extra['stop'].get('detail')}")
        return outcome

    async def _exec(self, ctx: AgentContext, config: str | None, session_rel: str, name: str = "",
                    stdin: bytes | None = None) -> AgentOutcome:
        env = {**ctx.env, "HOME": ctx.home_inside, "ASSAY_GATEWAY_KEY": ctx.gateway_key or "", "PYTHONUNBUFFERED": "1",
               "PYTHONDONTWRITEBYTECODE": "1"}
        argv = [sys.executable, "-m", "assay.agents.reference.loop", f"{ctx.home_inside}/{config}" if config else "-"]
        res = await ctx.sandbox.exec(argv, env=env, timeout_s=ctx.timeout_s, stdin=stdin)
        records = read_session_safely(ctx.home, session_rel)
        native = {}
        if records:
            native_name = "reference-session" + (f".{name}" if name else "")
            native[native_name] = safe_files.copy_out(ctx.home, session_rel, _aside(ctx), native_name + ".jsonl")
        try:  # the model's shell can write to the session log: what it planted there is read, not trusted
            final, stop, usage, events = _from_session(records)
            errors: tuple[str, ...] = ()
        except Exception as e:  # noqa: BLE001 - an unreadable session loses the trace, never the verdict
            final, stop, usage, events, errors = None, None, None, (), (f"session unreadable: {type(e).__name__}: {e}",)
        limits = tuple(x for x in (stop.get("reason") if stop else None,) if x in ("turns", "tool_calls"))
        return AgentOutcome(exit_code=res.exit_code, timed_out=res.timed_out, stdout=res.stdout, stderr=res.stderr,
                            final_output=final, usage=usage, limits_exceeded=(*res.limits_exceeded, *limits),
                            native_files=native, extra={"stop": stop} if stop else {}, events=events, errors=errors)


def _from_session(records: list[dict[str, Any]]) -> tuple[Any, dict[str, Any] | None, UsageTotals, tuple[Normalized, ...]]:
    """(final answer, stop record, usage, trace events) of the loop's session records."""
    final = next((r.get("text", "") for r in reversed(records) if r.get("type") == "final"), None)
    stop = next((r for r in reversed(records) if r.get("type") == "stop"), None)
    return final, stop, _usage(records), tuple(_events(records))


def _events(records: list[dict[str, Any]]) -> list[Normalized]:
    """The reference session as trace events. A world call carries the world's name (its function
    name kept as ``native_name``), so it is known as the agent's copy of the call the world recorded."""
    world = {r.get("call_id", ""): r["world_tool"] for r in records
             if r.get("type") == "tool_result" and isinstance(r.get("world_tool"), str)}

    def named(r: dict[str, Any]) -> dict[str, Any]:
        name, cid = r.get("name", ""), r.get("call_id", "")
        if cid in world:
            return {"call_id": cid, "name": world[cid], "native_name": name}
        return {"call_id": cid, "name": name}

    out = []
    for r in records:
        kind = r.get("type")
        if kind == "tool_call":
            out.append(Normalized(EventKind.tool_call, {**named(r), "arguments": r.get("arguments") or {}}))
        elif kind == "tool_result":
            out.append(Normalized(EventKind.tool_result, {
                **named(r), "ok": bool(r.get("ok")),
                "exit_code": r.get("exit_code"), "duration_s": r.get("duration_s"),
                "truncated": bool(r.get("truncated")), "output": str(r.get("output", ""))[-4000:],
                "error": r.get("error")}))
        elif kind == "retry":
            out.append(Normalized(EventKind.log, {"event": "retry", "reason": r.get("reason"),
                                                  "attempt": r.get("attempt"), "wait_s": r.get("wait_s")}))
        elif kind == "stop":
            out.append(Normalized(EventKind.log, {"event": "stop", "reason": r.get("reason"), "detail": r.get("detail")}))
    return out


def resume_from(home: Path, run: int) -> Resume | str:
    """How run ``run`` continues the message list the killed run before it kept (written after
    every step), or why it cannot. The harness only checks that the list is a regular file of a
    sane size, reached without a link; the loop reads it, inside the sandbox."""
    rel = _run_folder(run - 1) + MESSAGES_FILE
    size = safe_files.size(home, rel)
    if size is None:
        return f"the killed run left no message list to continue ({rel} is missing, a link or not a file)"
    if size > safe_files.MAX_BYTES:
        return f"the killed run's message list {rel} is larger than {safe_files.MAX_BYTES} bytes"
    return Resume(session=rel, note=RESUME_NOTE)


def _run_folder(run: int) -> str:
    """Where the loop of the agent's ``run``-th run in the attempt keeps its files (the home's top for the first)."""
    return "" if run <= 1 else f"runs/r{run}/"


def _aside(ctx: AgentContext) -> Path:
    """Harness-owned scratch beside the agent home (deleted after the attempt): native files are
    copied there, read without following links, and stored (redacted) as artifacts from there;
    never raw into the run directory."""
    return ctx.home.parent


def read_session_safely(home: Path, rel: str) -> list[dict[str, Any]]:
    """The loop's session log under the agent home, read without following a link (the agent's
    shell could have replaced it): a link or special file there reads as no session."""
    try:
        return read_jsonl(safe_files.read_text(home, rel))
    except OSError:
        return []


def read_session(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        return []
    return read_jsonl(path.read_text(errors="replace"))


def _usage(records: list[dict[str, Any]]) -> UsageTotals:
    calls = [r for r in records if r.get("type") == "model_response"]
    return UsageTotals(model_calls=len(calls), turns=len(calls),
                       input_tokens=sum(int((r.get("usage") or {}).get("prompt_tokens", 0)) for r in calls),
                       output_tokens=sum(int((r.get("usage") or {}).get("completion_tokens", 0)) for r in calls),
                       tool_calls=sum(1 for r in records if r.get("type") == "tool_call"))


