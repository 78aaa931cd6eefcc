"""Pi's RPC mode (``pi --mode rpc``), as far as a live measurement speaks it: strict JSONL on
stdin and stdout (records split on LF only), each command answered by a ``response`` carrying its
``id`` (Pi's ``docs/rpc.md``).

- ``prompt`` starts the session's work; ``success: true`` means accepted, queued or handled
  (``data.disposition``: ``started``, ``queued``, ``handled``), ``false`` rejected before
  acceptance (Pi 1.6.0 answers the first prompt only once its run has started, after any
  compaction before it: so the harness waits for the summary request, not for that answer).
- A message while Pi works is a ``prompt`` with ``streamingBehavior: "followUp"``: queued until
  Pi finishes what it does (``"steer"`` would cut in after the current tool calls). Without a
  ``streamingBehavior``, a prompt while Pi streams is an error by design, so it is always given.
- ``agent_settled`` is the event of Pi done; ``get_state`` says whether it still streams or
  compacts (``isStreaming``, ``isCompacting``) and how many messages wait (``pendingMessageCount``).
"""

from __future__ import annotations

import json
from typing import Any

#: the command-line mode flags instead of ``-p --mode json``
RPC_FLAGS = ["--mode", "rpc"]


def _line(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode() + b"\n"


class PiRpc:
    """The commands and events of :class:`assay.agents.live.LiveProtocol`, in Pi's RPC words."""

    during_command = '{"type": "prompt", "streamingBehavior": "followUp"}'

    def prompt(self, text: str, ref: str) -> bytes:
        return _line({"id": ref, "type": "prompt", "message": text})

    def during(self, text: str, ref: str) -> bytes:
        return _line({"id": ref, "type": "prompt", "message": text, "streamingBehavior": "followUp"})

    def state(self, ref: str) -> bytes:
        return _line({"id": ref, "type": "get_state"})

    def response(self, event: dict[str, Any], ref: str) -> tuple[bool, str] | None:
        if event.get("type") != "response" or event.get("id") != ref:
            return None
        shown = {k: event[k] for k in ("command", "success", "data", "error") if k in event}  # data: its disposition
        return event.get("success") is True, json.dumps(shown, ensure_ascii=False)[:300]

    def settled(self, event: dict[str, Any]) -> bool:
        return event.get("type") == "agent_settled"

    def idle(self, event: dict[str, Any]) -> bool:
        data = event.get("data") if isinstance(event.get("data"), dict) else {}
        return not (data.get("isStreaming") or data.get("isCompacting") or data.get("pendingMessageCount"))
