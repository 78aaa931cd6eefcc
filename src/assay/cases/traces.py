"""The neutral shape every production-trace reader produces, and the helpers they share.

A reader maps one external format (OTLP/JSON, a Langfuse export, assay's JSONL) onto
:class:`ImportedTrace`: the user's words, the tool calls the agent made, its final answer, and
the user's correction if there was one. Nothing here is trusted: every field is read
defensively, a malformed record is reported with where it was, never a traceback.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from assay.errors import UsageError


@dataclass
class ImportedTrace:
    trace_id: str
    format: str
    prompt: str | None = None
    messages: list[dict[str, str]] = field(default_factory=list)  # {role, text}
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # {name, arguments, result, ok}
    output: str | None = None
    correction: Any = None
    source_task: str | None = None
    category: str | None = None
    verdict: str | None = None

    def finish(self) -> "ImportedTrace":
        """The prompt is the first user message when the reader found no explicit one."""
        if self.prompt is None:
            self.prompt = next((m["text"] for m in self.messages if m["role"] == "user" and m["text"].strip()), None)
        return self


class TraceFormatError(UsageError):
    """The file is not in the format named; the message says where and what was expected."""


def read_json_or_lines(path: Path) -> list[Any]:
    """A file holding one JSON document, or JSON Lines (one document per line)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TraceFormatError(f"{path}: cannot be read as UTF-8 text ({e})") from None
    try:
        return [json.loads(text)]
    except ValueError:
        pass
    docs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            docs.append(json.loads(line))
        except ValueError as e:
            raise TraceFormatError(f"{path}: line {n} is not JSON ({e.args[0][:80]}); "
                                   "give one JSON document or JSON Lines") from None
    return docs


def product_session(docs: list[Any]) -> str | None:
    """The agent product whose session file ``docs`` (the file's JSON documents) look like, or
    None: such a file is the product's own log, not a trace export, and an importer that read it
    as one would write an empty candidate."""
    first = next((d for d in docs if isinstance(d, dict)), None)
    if first is None:
        return None
    if first.get("traceSchema") == "openclaw-trajectory":
        return "an OpenClaw trajectory file"
    if first.get("type") == "session" and "cwd" in first:
        version = first.get("version")
        if "createdAt" in first:
            return f"a DeepSeek Harness session file (session version {version})"
        if version == 3:
            return "a Pi session file (session version 3)"
        return f"an OpenClaw or Pi session transcript (session version {version})"
    if "session_key" in first and "model_config" in first and "messages" in first:
        return "a Hermes Agent sessions export"
    return None


def refuse_product_session(docs: list[Any], path: Path, fmt: str) -> None:
    """Refuse a product's session file given as a trace export, naming what it looks like."""
    what = product_session(docs)
    if what is not None:
        raise TraceFormatError(f"{path}: this looks like {what}, not a {fmt} export; a product's session is read by "
                               "its adapter during a run (`assay run --agent ...`), not imported as a trace")


def text_of(value: Any) -> str | None:
    """Plain text from the usual message content shapes (string, parts list, {text|content})."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = [text_of(p) for p in value]
        joined = "\n".join(p for p in parts if p)
        return joined or None
    if isinstance(value, dict):
        if value.get("type") not in (None, "text", "input_text", "output_text"):
            return None
        for key in ("content", "text", "value"):
            if key in value:
                return text_of(value[key])
    return None


def messages_of(value: Any) -> list[dict[str, str]]:
    """Chat messages from a list of {role, content|parts} (OpenAI, GenAI semconv, Langfuse)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return [{"role": "user", "text": value}]
    if isinstance(value, dict) and isinstance(value.get("messages"), list):
        value = value["messages"]
    out = []
    if isinstance(value, list):
        for m in value:
            if not isinstance(m, dict):
                continue
            role = str(m.get("role") or "")
            t = text_of(m.get("parts")) if "parts" in m else text_of(m.get("content"))
            if role and t:
                out.append({"role": role, "text": t})
    return out


def parse_json_maybe(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def expect_list(doc: Any, where: str, what: str) -> Iterator[Any]:
    if not isinstance(doc, list):
        raise TraceFormatError(f"{where}: expected a list of {what}, found {type(doc).__name__}")
    yield from doc
