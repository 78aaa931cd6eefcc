"""What a normalizer returns: agent-neutral trace events, before they are written.

Normalizers are pure functions from an agent's native session files to a list of
:class:`Normalized`, returned with the agent's outcome; only the engine writes them to the
trace. Tool names are mapped onto the neutral tool contract (``shell``, ``read``, ``write``, ``edit``, ``list``) with the agent's own
name kept in ``native_name``, so trajectory predicates never need to know which agent ran.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable
from assay.untrusted.json_text import loads as loads_untrusted
from assay.untrusted.numeral import amount, count

from assay.agents.base import Normalized
from assay.harness.evidence import world_tool_name
from assay.harness.wiring import WorldToolContract
from assay.trace.content import TEXT_BLOCKS, content_text
from assay.trace.events import EventKind, ModelResponsePayload, ToolCallPayload, ToolResultPayload, Usage

#: output kept per tool result in the trace (the native session is stored whole as an artifact)
OUTPUT_CAP = 8000

ArgMapper = Callable[[dict[str, Any]], dict[str, Any]]

@dataclass(frozen=True)
class ToolNames:
    """An agent's native tool names -> neutral names, and how to read their arguments."""

    to_neutral: dict[str, str]
    arg_mappers: dict[str, ArgMapper]

    def neutral(self, native: str) -> str:
        return self.to_neutral.get(native) or native

    def arguments(self, native: str, args: Any) -> dict[str, Any] | str:
        if isinstance(args, str):
            try:
                args = loads_untrusted(args) if args.strip() else {}
            except ValueError:
                return args
        if not isinstance(args, dict):
            return {"value": args}
        mapper = self.arg_mappers.get(native)
        if mapper is None:
            return args
        try:
            return mapper(args)
        except (KeyError, TypeError, IndexError, AttributeError):
            return args


def pick(*keys: str) -> Callable[[dict[str, Any]], Any]:
    """The first present key's value (agents spell the same argument differently)."""
    def get(args: dict[str, Any]) -> Any:
        for k in keys:
            if k in args:
                return args[k]
        return None
    return get


def tool_call(names: ToolNames, call_id: str, native: str, args: Any, ts: float | None) -> Normalized:
    neutral_args = names.arguments(native, args)
    payload = ToolCallPayload(call_id=call_id or "", name=names.neutral(native), arguments=neutral_args,
                              native_name=native).model_dump()
    if isinstance(args, (dict, str)) and neutral_args != args:
        payload["native_arguments"] = args
    return Normalized(EventKind.tool_call, payload, ts)


def tool_result(names: ToolNames, call_id: str, native: str, output: str, *, ok: bool, ts: float | None,
                exit_code: int | None = None, duration_s: float | None = None, error: str | None = None
                ) -> Normalized:
    truncated = len(output) > OUTPUT_CAP
    payload = ToolResultPayload(call_id=call_id or "", name=names.neutral(native) if native else "", ok=ok,
                                exit_code=exit_code, duration_s=amount(duration_s), truncated=truncated,
                                output=output[:OUTPUT_CAP], error=error if error is not None else
                                (None if ok else output[:500])).model_dump()
    if native:
        payload["native_name"] = native
    return Normalized(EventKind.tool_result, payload, ts)


def model_response(*, model: str, input_tokens: int, output_tokens: int, cached_tokens: int = 0,
                   latency_s: float = 0.0, cost_usd: float = 0.0, finish_reason: str | None = None,
                   text: str = "", tool_calls: list[dict[str, Any]] | None = None, ts: float | None = None,
                   **extra: Any) -> Normalized:
    # numbers the agent's session claims: what is no count or amount (NaN, infinite, negative, text...)
    # counts as nothing, so no claim can make a result that cannot be read back (untrusted/numeral.py)
    payload = ModelResponsePayload(
        model=model or "", usage=Usage(input_tokens=count(input_tokens) or 0, output_tokens=count(output_tokens) or 0,
                                       cached_tokens=count(cached_tokens) or 0),
        latency_s=amount(latency_s) or 0.0, cost_usd=amount(cost_usd) or 0.0, finish_reason=finish_reason,
        text=text, tool_calls=tool_calls or []).model_dump()
    payload.update({k: v for k, v in extra.items() if v is not None})
    return Normalized(EventKind.model_response, payload, ts)


def final_output(text: str, ts: float | None = None, **extra: Any) -> Normalized:
    return Normalized(EventKind.final_output, {"text": text[-4000:], **extra}, ts)


def error(message: str, ts: float | None = None, **extra: Any) -> Normalized:
    return Normalized(EventKind.error, {"message": message, **extra}, ts)


def text_of(content: Any) -> str:
    """Plain text of a session message's content (string, or text blocks run together)."""
    return content_text(content, sep="", kinds=TEXT_BLOCKS)


def iso_ts(value: Any) -> float | None:
    """Seconds since the epoch from an ISO string or a millisecond/second number."""
    if value is None:
        return None
    if isinstance(value, (int, float)):  # NaN, an infinity or an int past a float: no time (the engine's own is used)
        seconds = amount(value)
        return None if seconds is None else (seconds / 1000.0 if seconds > 1e11 else seconds)
    try:
        return datetime.fromisoformat(str(value).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def read_jsonl(text: str) -> list[dict[str, Any]]:
    """JSON objects of a JSONL text; torn or non-object lines are skipped (a killed agent tears lines)."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        try:
            obj = loads_untrusted(line)
        except ValueError:  # a torn line, or one nested past the parser's depth
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


def _world_named(call: dict[str, Any], kinds: tuple[str, ...]) -> dict[str, Any]:
    native = call.get("native_name")
    if not native or call.get("name") != native:
        return call
    world = world_tool_name(str(native), kinds)
    return call if world is None else {**call, "name": world}


def name_world_tools(items: list[Normalized], world_tools: WorldToolContract | None) -> list[Normalized]:
    """The items with every world tool the agent reached over MCP named as the world names it
    (``mcp__assay__ledger_record_entry`` -> ``ledger.record_entry``), its own name kept in
    ``native_name``. Without world tools wired in, the items are returned as they are."""
    if world_tools is None:
        return items
    out: list[Normalized] = []
    for it in items:
        data = it.data
        if it.kind in (EventKind.tool_call, EventKind.tool_result):
            data = _world_named(data, world_tools.kinds)
        elif it.kind is EventKind.model_response and isinstance(data.get("tool_calls"), list):
            data = {**data, "tool_calls": [_world_named(c, world_tools.kinds) if isinstance(c, dict) else c
                                           for c in data["tool_calls"]]}
        out.append(it if data is it.data else Normalized(it.kind, data, it.ts))
    return out
