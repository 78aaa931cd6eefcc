"""The upstream backend: forwards to any OpenAI- or Anthropic-compatible base URL.

The agent's request (whatever wire it used) goes upstream in the upstream's own format, streamed
when the agent asked for a stream (each upstream chunk is relayed to the agent as it arrives,
see :mod:`assay.gateway.relay`); the answer comes back in the agent's format, so accounting,
budgets, faults and recording work the same as for every other backend. Per-model limits and
retries: :mod:`assay.gateway.upstream_limits`. The upstream key is
read from the environment at start and is never written anywhere (the service hands it to
the redactor).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
from typing import Any, AsyncIterator

import aiohttp

from assay.gateway.backends.base import BackendSession, ModelBackend
from assay.gateway.backends.upstream_stream import AnthropicStreamParser, OpenAIStreamParser
from assay.gateway.errors import WireError
from assay.gateway.neutral import Message, ModelReply, ModelRequest, ToolCall, Usage, parse_arguments
from assay.gateway.stream import Delta
from assay.gateway.upstream_limits import DEFAULT_MAX_CONCURRENCY, RetryPolicy, UpstreamLimits
from assay.harness.services import AttemptHandle
from assay.records.manifest import GatewayRecord
from assay.spec.load import LoadedSuite
from assay.trace.events import EventKind

TIMEOUT_S = 300.0
JSON_HEADERS = {"Content-Type": "application/json"}


def openai_body(req: ModelRequest, model: str) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = []
    for m in req.messages:
        if m.role == "tool":
            msgs.append({"role": "tool", "tool_call_id": m.tool_call_id or "", "content": m.text})
        elif m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.text or None}
            if m.tool_calls:
                d["tool_calls"] = [{"id": c.id, "type": "function",
                                    "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
                                   for c in m.tool_calls]
            msgs.append(d)
        else:
            msgs.append({"role": m.role, "content": m.text})
    body: dict[str, Any] = {"model": model, "messages": msgs, "stream": False}
    if req.tools:
        body["tools"] = [{"type": "function", "function": {"name": t.name, "description": t.description,
                                                            "parameters": t.parameters or {"type": "object"}}}
                         for t in req.tools]
        if req.tool_choice in ("auto", "none", "required"):
            body["tool_choice"] = req.tool_choice
    if req.max_tokens:
        body["max_tokens"] = req.max_tokens
    if req.temperature is not None:
        body["temperature"] = req.temperature
    return body


def openai_reply(data: dict[str, Any]) -> ModelReply:
    choice = (data.get("choices") or [{}])[0]
    msg = choice.get("message") or {}
    calls = tuple(ToolCall(c.get("id", ""), (c.get("function") or {}).get("name", ""),
                           parse_arguments((c.get("function") or {}).get("arguments")))
                  for c in msg.get("tool_calls") or [])
    u = data.get("usage") or {}
    usage = Usage(u.get("prompt_tokens", 0), u.get("completion_tokens", 0),
                  (u.get("prompt_tokens_details") or {}).get("cached_tokens", 0) or 0)
    finish = choice.get("finish_reason") or ("tool_calls" if calls else "stop")
    return ModelReply(text=msg.get("content") or "", tool_calls=calls, usage=usage, model=data.get("model", ""),
                      finish_reason={"tool_calls": "tool_calls", "length": "length"}.get(finish, "stop"))


def _anthropic_messages(messages: tuple[Message, ...]) -> tuple[str, list[dict[str, Any]]]:
    system = "\n".join(m.text for m in messages if m.role == "system")
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            block = {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.text}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.text}] if m.text else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in m.tool_calls]
            out.append({"role": "assistant", "content": blocks or [{"type": "text", "text": ""}]})
        else:
            out.append({"role": "user", "content": [{"type": "text", "text": m.text}]})
    return system, out


def anthropic_body(req: ModelRequest, model: str) -> dict[str, Any]:
    system, msgs = _anthropic_messages(req.messages)
    body: dict[str, Any] = {"model": model, "messages": msgs, "max_tokens": req.max_tokens or 4096}
    if system:
        body["system"] = system
    if req.tools:
        body["tools"] = [{"name": t.name, "description": t.description,
                          "input_schema": t.parameters or {"type": "object"}} for t in req.tools]
    return body


def anthropic_reply(data: dict[str, Any]) -> ModelReply:
    text = "".join(b.get("text", "") for b in data.get("content") or [] if b.get("type") == "text")
    calls = tuple(ToolCall(b.get("id", ""), b.get("name", ""), b.get("input") or {})
                  for b in data.get("content") or [] if b.get("type") == "tool_use")
    u = data.get("usage") or {}
    stop = data.get("stop_reason")
    return ModelReply(text=text, tool_calls=calls, model=data.get("model", ""),
                      finish_reason="tool_calls" if stop == "tool_use" else "length" if stop == "max_tokens" else "stop",
                      usage=Usage(u.get("input_tokens", 0), u.get("output_tokens", 0), u.get("cache_read_input_tokens", 0) or 0))


#: well-known API hosts -> OpenTelemetry's gen_ai.provider.name values
KNOWN_PROVIDERS = {"openai.com": "openai", "anthropic.com": "anthropic", "deepseek.com": "deepseek",
                   "mistral.ai": "mistral_ai", "groq.com": "groq", "x.ai": "x_ai", "cohere.com": "cohere",
                   "openrouter.ai": "openrouter", "googleapis.com": "gcp.gemini"}


def provider_of(settings: dict[str, Any]) -> str:
    """The provider an upstream record reaches: its ``provider`` setting, a known API host, or the host."""
    if isinstance(settings.get("provider"), str) and settings["provider"]:
        return settings["provider"]
    from urllib.parse import urlsplit

    host = (urlsplit(str(settings.get("base_url") or "")).hostname or "").lower()
    for domain, name in KNOWN_PROVIDERS.items():
        if host == domain or host.endswith("." + domain):
            return name
    return host or "upstream"


class UpstreamSession(BackendSession):
    def __init__(self, backend: "UpstreamBackend"):
        self.backend = backend

    def _target(self, req: ModelRequest, stream: bool) -> tuple[str, str, dict[str, Any], bool]:
        b = self.backend
        model = b.record.model or req.model
        anthropic = b.record.settings.get("api") == "anthropic"
        body = anthropic_body(req, model) if anthropic else openai_body(req, model)
        if stream:
            body["stream"] = True
            if not anthropic:
                body["stream_options"] = {"include_usage": True}  # usage arrives in the final chunk
        base = b.record.settings["base_url"]
        url = f"{base}/v1/messages" if anthropic and not base.endswith("/v1") else (
            f"{base}/messages" if anthropic else f"{base}/chat/completions")
        return model, url, body, anthropic

    async def _open(self, model: str, url: str, body: dict[str, Any], call_no: int) -> aiohttp.ClientResponse:
        """POST with the model's slot held, retrying 429/5xx and refused connections with back-off.
        Returns a 200 response whose body is not read yet, slot still held (released by the caller)."""
        b = self.backend
        assert b.client is not None
        limit = b.limits.for_model(model)
        retry = 0
        while True:
            waited = await limit.acquire()
            if waited > 0.001 and self.notify is not None:
                self.notify(EventKind.log, {"reason": "upstream_queued", "call": call_no, "model": model,
                                            "waited_s": round(waited, 6)})
            status, after, detail = 0, None, ""
            try:
                resp = await b.client.post(url, data=json.dumps(body).encode(), headers=JSON_HEADERS)
            except asyncio.TimeoutError as e:
                limit.release()
                raise WireError(504, "upstream_timeout", f"the upstream did not answer in time: {e!r}") from None
            except aiohttp.ClientError as e:
                limit.release()
                detail = f"{type(e).__name__}: {e}"
                if retry >= b.retry.max_retries:
                    raise WireError(502, "upstream_unreachable", detail) from None
            else:
                if resp.status < 400:
                    return resp
                status, after = resp.status, resp.headers.get("retry-after")
                try:
                    detail = (await resp.read()).decode("utf-8", "replace")[:1000]
                except aiohttp.ClientError:
                    detail = ""
                resp.release()
                limit.release()
                if status not in b.retry.statuses or retry >= b.retry.max_retries:
                    headers = {"Retry-After": after} if after else {}
                    raise WireError(status, "upstream_error", detail, headers)
            wait = b.retry.delay(retry, after, b.rng)
            retry += 1
            if self.notify is not None:
                self.notify(EventKind.log, {"reason": "upstream_retry", "call": call_no, "model": model, "retry": retry,
                                            "status": status or None, "retry_after": after, "wait_s": round(wait, 6),
                                            "detail": detail[:300]})
            b.limits.backing_off += 1
            try:
                await asyncio.sleep(wait)  # back-off before the retry, bounded by the policy's max_s
            finally:
                b.limits.backing_off -= 1

    async def complete(self, req: ModelRequest, call_no: int) -> ModelReply:
        model, url, body, anthropic = self._target(req, stream=False)
        resp = await self._open(model, url, body, call_no)
        try:
            raw = await resp.read()
        except (aiohttp.ClientError, asyncio.TimeoutError) as e:
            raise WireError(502, "upstream_unreachable", f"{type(e).__name__}: {e}") from None
        finally:
            resp.release()
            self.backend.limits.for_model(model).release()
        try:
            data = json.loads(raw)
        except ValueError:
            raise WireError(502, "upstream_malformed", f"the upstream answered non-JSON: {raw[:300]!r}") from None
        return anthropic_reply(data) if anthropic else openai_reply(data)

    async def stream(self, req: ModelRequest, call_no: int) -> AsyncIterator[list[Delta]]:
        model, url, body, anthropic = self._target(req, stream=True)
        resp = await self._open(model, url, body, call_no)
        parser = AnthropicStreamParser() if anthropic else OpenAIStreamParser()
        try:
            buf = b""
            async for data in resp.content.iter_any():  # whatever arrived, at once: no buffering here
                buf += data
                *lines, buf = buf.split(b"\n")
                # only data lines carry anything: both parsers answer [] to blank, event and comment lines
                batch = [d for line in lines if line.startswith(b"data:")
                         for d in parser.line(line.decode("utf-8", "replace").rstrip("\r"))]
                if batch:
                    yield batch
            yield parser.line(buf.decode("utf-8", "replace")) + parser.end()
        finally:
            resp.close()  # an unfinished stream must not go back to the pool
            self.backend.limits.for_model(model).release()


class UpstreamBackend(ModelBackend):
    name = "upstream"

    @classmethod
    def record_from_cli(cls, value: str, suite: LoadedSuite) -> GatewayRecord:
        from assay.gateway.config import cli_argument, upstream_record

        return upstream_record(cli_argument(value))

    def __init__(self, record: Any):
        super().__init__(record)
        self.client: aiohttp.ClientSession | None = None
        self.limits = UpstreamLimits(record.settings.get("limits"))
        self.retry = RetryPolicy.from_settings(record.settings.get("retry"))
        self.rng = random.Random()

    def model_id(self) -> str:
        return self.record.model or "upstream"

    def provider_name(self) -> str:
        """``settings.provider`` when given, else the upstream's host read as a provider
        (``api.deepseek.com`` -> ``deepseek``), never the wire format it speaks."""
        return provider_of(self.record.settings)

    async def start(self) -> None:
        headers: dict[str, str] = {}
        key = os.environ.get(self.record.settings.get("api_key_env") or "", "")
        if key:
            if self.record.settings.get("api") == "anthropic":
                headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
            else:
                headers = {"Authorization": f"Bearer {key}"}
        elif self.record.settings.get("api") == "anthropic":
            headers = {"anthropic-version": "2023-06-01"}
        conc = sum(int(v.get("max_concurrency", DEFAULT_MAX_CONCURRENCY)) for v in self.limits.settings.values())
        # aiohttp, not httpx, for this one hot path: measured 3-25x the requests/s at concurrency
        # 1-64 against the same upstream (bench/gateway.py, docs/gateway.md)
        self.client = aiohttp.ClientSession(
            headers=headers, trust_env=False, connector=aiohttp.TCPConnector(limit=max(64, conc), force_close=False),
            timeout=aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=TIMEOUT_S))

    async def stop(self) -> None:
        if self.client is not None:
            await self.client.close()

    def open(self, handle: AttemptHandle | None) -> BackendSession:
        return UpstreamSession(self)


