"""A conversation's typed history as chat messages (the OpenAI Chat Completions shape), the
common ground from which each adapter writes its own session format.

Every event becomes real messages in the order it happened: tool calls as assistant
``tool_calls`` answered by ``tool`` messages, never as prose pasted into a prompt. A ``claim``
(an agent that said it acted without the world proving it) becomes the claimed call answered by
an error: what the agent reads back is that the action failed.
"""

from __future__ import annotations

import json
from typing import Any, Callable

from assay.spec.conversation import (UNPROVEN_CLAIM_ERROR, AgentSaid, Approval, Claim, Clarification, Correction,
                                     HistoryEvent, ToolDone, ToolFailed, UserSaid)

#: how a neutral tool name (shell, ledger.add_entry) is spelled by one agent
ToolNamer = Callable[[str], str]


def history_call_id(index: int) -> str:
    """The id of the tool call made by history event ``index`` (stable: scripts may refer to it)."""
    return f"hist_{index:03d}"


def chat_messages(events: tuple[HistoryEvent, ...] | list[HistoryEvent], name: ToolNamer) -> list[dict[str, Any]]:
    """The history as chat messages (no system message), tool names spelled by ``name``."""
    out: list[dict[str, Any]] = []
    for i, ev in enumerate(events):
        if isinstance(ev, (UserSaid, Correction)):
            out.append({"role": "user", "content": ev.text})
        elif isinstance(ev, (AgentSaid, Clarification)):
            out.append({"role": "assistant", "content": ev.text if isinstance(ev, AgentSaid) else ev.question})
        elif isinstance(ev, Approval):
            verdict = "Approved" if ev.decision == "approved" else "Denied"
            args = json.dumps(ev.arguments, ensure_ascii=False, sort_keys=True)
            out.append({"role": "user", "content": f"{verdict}: {ev.name} {args}" + (f" ({ev.note})" if ev.note else "")})
        elif isinstance(ev, (ToolDone, ToolFailed, Claim)):
            cid = history_call_id(i)
            text = ev.text if isinstance(ev, Claim) else None
            out.append({"role": "assistant", "content": text, "tool_calls": [{
                "id": cid, "type": "function",
                "function": {"name": name(ev.name), "arguments": json.dumps(ev.arguments, ensure_ascii=False)}}]})
            if isinstance(ev, ToolDone):
                content = ev.result if isinstance(ev.result, str) else json.dumps(ev.result, ensure_ascii=False)
            else:
                content = "ERROR: " + (ev.error if isinstance(ev, ToolFailed) else UNPROVEN_CLAIM_ERROR)
            out.append({"role": "tool", "tool_call_id": cid, "content": content})
        else:  # pragma: no cover - the union is closed; a new event type must be mapped here
            raise TypeError(f"history event {type(ev).__name__} has no chat mapping")
    return out


def trace_events(events: tuple[HistoryEvent, ...] | list[HistoryEvent]) -> list[dict[str, Any]]:
    """The history as recorded in the trace (one ``log`` payload per event, typed)."""
    return [{"event": "history", "index": i, **ev.model_dump(mode="json")} for i, ev in enumerate(events)]
