"""The reference agent's loop, run INSIDE the sandbox: ``python -m assay.agents.reference.loop CONFIG``.

A plain OpenAI Chat Completions tool-calling loop: ask the model, run the tools it calls in the
workspace (shell, read, write, edit, list, plus world tools from ``ASSAY_TOOLS_URL``), feed the
results back, stop when the model answers without tool calls or a budget is spent. Only
classified transient errors are retried (429, 5xx, timeouts, dropped or malformed bodies),
with backoff that honours Retry-After. Every step goes to a session JSONL in the agent home,
which the adapter maps onto the trace. Standard library plus httpx only.
"""

from __future__ import annotations

import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from assay.agents.reference.tools import BUILTIN_SCHEMAS, WorldTools, run_builtin

SYSTEM = ("You are a careful software agent working in the current directory. Use the tools to inspect and "
          "change files; answer with a short summary when the task is done.")
TRANSIENT_STATUS = {408, 409, 425, 429, 500, 502, 503, 504, 529}
#: the answer a tool call gets when the run that made it ended before reading its result
UNANSWERED = "ERROR: no result: the run that made this call ended before its answer was read"


class Transient(Exception):
    def __init__(self, reason: str, retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retry_after = retry_after


class Fatal(Exception):
    pass


class Session:
    """The agent's own session log (JSON lines in the agent home)."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)

    def log(self, kind: str, **data: Any) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps({"type": kind, "ts": time.time(), **data}, ensure_ascii=False) + "\n")


def _retry_after(resp: httpx.Response) -> float | None:
    raw = resp.headers.get("retry-after")
    try:
        return float(raw) if raw is not None else None
    except ValueError:
        return None


def call_model(client: httpx.Client, url: str, body: dict[str, Any]) -> dict[str, Any]:
    """One model call; raises Transient or Fatal with a classified reason."""
    try:
        resp = client.post(url, json=body)
    except httpx.TimeoutException:
        raise Transient("timeout") from None
    except (httpx.RemoteProtocolError, httpx.ReadError, httpx.ConnectError, httpx.WriteError) as e:
        raise Transient(f"connection: {type(e).__name__}") from None
    if resp.status_code in TRANSIENT_STATUS:
        raise Transient(f"http_{resp.status_code}", _retry_after(resp))
    if resp.status_code >= 400:
        raise Fatal(f"http_{resp.status_code}: {resp.text[:500]}")
    try:
        data = resp.json()
        msg = data["choices"][0]["message"]
    except (ValueError, KeyError, IndexError, TypeError):
        raise Transient("malformed_body") from None
    if not isinstance(msg, dict):
        raise Transient("malformed_body")
    return data


def call_with_retry(client: httpx.Client, url: str, body: dict[str, Any], session: Session, *,
                    max_retries: int, base_delay: float, max_delay: float) -> dict[str, Any]:
    attempt = 0
    while True:
        try:
            return call_model(client, url, body)
        except Transient as e:
            attempt += 1
            if attempt > max_retries:
                raise Fatal(f"gave up after {max_retries} retries; last error: {e.reason}") from None
            wait = e.retry_after if e.retry_after is not None else min(max_delay, base_delay * 2 ** (attempt - 1))
            wait = min(max_delay, wait) + random.uniform(0, base_delay / 4)
            session.log("retry", reason=e.reason, attempt=attempt, wait_s=round(wait, 3))
            time.sleep(wait)


def run(cfg: dict[str, Any]) -> int:
    session = Session(Path(cfg["session_file"]))
    prompt = cfg["prompt"] if "prompt" in cfg else Path(cfg["prompt_file"]).read_text()
    key = os.environ.get("ASSAY_GATEWAY_KEY", "")
    client = httpx.Client(timeout=float(cfg.get("request_timeout_s", 60)), trust_env=False,
                          headers={"Authorization": f"Bearer {key}"})
    allowed = list(cfg.get("tools") or [])
    tools = [BUILTIN_SCHEMAS[t] for t in allowed if t in BUILTIN_SCHEMAS]
    world = WorldTools.from_env(allowed)
    tools += world.schemas()
    history = _history(cfg, session)
    if history is None:
        return 5
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, *history, {"role": "user", "content": prompt}]
    session.log("start", model=cfg.get("model"), tools=[t["function"]["name"] for t in tools], resumed=len(history))
    try:
        return _loop(cfg, session, client, tools, allowed, world, messages)
    finally:
        checkpoint(cfg, messages, last=True)


def checkpoint(cfg: dict[str, Any], messages: list[dict[str, Any]], last: bool = False) -> None:
    """The conversation so far (without the system message): written when the run ends (the next
    turn of a conversation continues from it) and, with ``every_step``, after every step too (a run
    started again after this one was killed continues from it; a kill lands while a tool call is
    answered, never while this is written)."""
    if cfg.get("messages_out") and (last or cfg.get("every_step")):
        Path(cfg["messages_out"]).write_text(json.dumps(messages[1:], ensure_ascii=False))


def close_unanswered(history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """Every tool call in ``history`` answered: a call whose answer was never read (the run was
    killed while it ran) gets an error result, so the conversation is well formed and says so."""
    out: list[dict[str, Any]] = []
    open_ids: list[str] = []
    closed: list[str] = []

    def close() -> None:
        for cid in open_ids:
            out.append({"role": "tool", "tool_call_id": cid, "content": UNANSWERED})
            closed.append(cid)
        open_ids.clear()

    for m in history:
        if m.get("role") == "tool":
            if m.get("tool_call_id") in open_ids:
                open_ids.remove(m.get("tool_call_id"))
        else:
            close()
        out.append(m)
        if m.get("role") == "assistant":
            open_ids.extend(str(c.get("id", "")) for c in m.get("tool_calls") or [] if isinstance(c, dict))
    close()
    return out, closed


def _history(cfg: dict[str, Any], session: Session) -> list[dict[str, Any]] | None:
    """The conversation to continue (a conversation task's next turn), or None when it is gone:
    the loop never starts afresh in its place."""
    path = cfg.get("history_file")
    if not path:
        return []
    try:
        history = json.loads(Path(path).read_text())
    except (OSError, ValueError) as e:
        session.log("stop", reason="session_lost", detail=f"cannot read {path}: {e}")
        print(f"reference agent: the conversation to continue is gone: {e}", file=sys.stderr)
        return None
    if not isinstance(history, list) or not all(isinstance(m, dict) for m in history):
        session.log("stop", reason="session_lost", detail=f"{path} is not a list of messages")
        return None
    history, closed = close_unanswered(history)
    if closed:
        session.log("resume", unanswered=closed)
    return history


def _loop(cfg: dict[str, Any], session: Session, client: httpx.Client, tools: list[dict[str, Any]],
          allowed: list[str], world: WorldTools, messages: list[dict[str, Any]]) -> int:
    url = cfg["gateway_url"].rstrip("/") + "/v1/chat/completions"
    max_turns = cfg.get("max_turns") or 50
    max_tool_calls = cfg.get("max_tool_calls")
    tool_calls = 0
    for turn in range(1, max_turns + 1):
        body: dict[str, Any] = {"model": cfg.get("model") or "default", "messages": messages}
        if tools:
            body["tools"], body["tool_choice"] = tools, "auto"
        try:
            data = call_with_retry(client, url, body, session, max_retries=int(cfg.get("max_retries", 6)),
                                   base_delay=float(cfg.get("retry_base_s", 0.5)), max_delay=float(cfg.get("retry_max_s", 10)))
        except Fatal as e:
            session.log("stop", reason="model_error", detail=str(e))
            print(f"reference agent: model call failed: {e}", file=sys.stderr)
            return 3
        msg = data["choices"][0]["message"]
        calls = msg.get("tool_calls") or []
        session.log("model_response", turn=turn, text=msg.get("content") or "", tool_calls=len(calls),
                    usage=data.get("usage") or {})
        messages.append({"role": "assistant", "content": msg.get("content"),
                         **({"tool_calls": calls} if calls else {})})
        checkpoint(cfg, messages)
        if not calls:
            text = msg.get("content") or ""
            session.log("final", text=text)
            print(text)
            return 0
        for c in calls:
            fn = c.get("function") or {}
            name = fn.get("name", "")
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = None
            session.log("tool_call", call_id=c.get("id", ""), name=name, arguments=args if args is not None else fn.get("arguments"))
            if max_tool_calls is not None and tool_calls >= max_tool_calls:
                result = {"ok": False, "error": "tool-call budget spent", "output": ""}
            elif not isinstance(args, dict):
                result = {"ok": False, "error": "arguments are not a JSON object", "output": ""}
            elif name in BUILTIN_SCHEMAS and name in allowed:
                tool_calls += 1
                result = run_builtin(name, args, timeout_s=float(cfg.get("shell_timeout_s", 120)))
            elif world.has(name):
                tool_calls += 1
                result = world.call(name, args)
            else:
                result = {"ok": False, "error": f"unknown tool {name!r}", "output": ""}
            session.log("tool_result", call_id=c.get("id", ""), name=name, **result)
            content = result.get("output", "") if result.get("ok") else f"ERROR: {result.get('error')}\n{result.get('output', '')}"
            messages.append({"role": "tool", "tool_call_id": c.get("id", ""), "content": content})
            checkpoint(cfg, messages)
        if max_tool_calls is not None and tool_calls >= max_tool_calls:
            session.log("stop", reason="tool_calls", detail=f"tool-call budget {max_tool_calls} spent")
            return 4
    session.log("stop", reason="turns", detail=f"turn budget {max_turns} spent")
    return 4


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m assay.agents.reference.loop CONFIG.json|-  (-: the config on stdin)", file=sys.stderr)
        return 2
    return run(json.loads(sys.stdin.read() if args[0] == "-" else Path(args[0]).read_text()))


if __name__ == "__main__":
    sys.exit(main())
