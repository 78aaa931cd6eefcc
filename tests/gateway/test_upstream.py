"""The upstream backend forwarding to a real OpenAI-/Anthropic-compatible server on loopback
(a second gateway, in scripted mode), with its own key that never lands in the trace."""

from __future__ import annotations

from pathlib import Path

import anthropic
import openai
import pytest

from assay.records.manifest import GatewayRecord
from tests.gateway.conftest import ANTHROPIC_TOOLS, OPENAI_TOOLS, start_gateway

UPSTREAM_KEY = "sk-upstream-0123456789abcdef"


@pytest.fixture
def upstream(tmp_path: Path, script_file: Path):
    up = start_gateway(tmp_path / "up", GatewayRecord(backend="scripted", settings={"script": str(script_file)}),
                       key=UPSTREAM_KEY)
    yield up
    up.service.stop_sync()


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_forwarding_with_own_key(tmp_path: Path, upstream, api: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_UPSTREAM_API_KEY", UPSTREAM_KEY)
    (tmp_path / "up").mkdir(exist_ok=True)
    base = upstream.url + "/v1" if api == "openai" else upstream.url
    rec = GatewayRecord(backend="upstream", model="up-model",
                        settings={"base_url": base, "api": api, "api_key_env": "ASSAY_UPSTREAM_API_KEY"},
                        prices={"up-model": {"input": 3.0, "output": 15.0}})
    gw = start_gateway(tmp_path, rec, key="sk-front-0123456789abcdef")
    try:
        assert UPSTREAM_KEY in gw.service.secrets().values()
        c = openai.OpenAI(base_url=gw.url + "/v1", api_key=gw.key, max_retries=0)
        r = c.chat.completions.create(model="whatever", messages=[{"role": "user", "content": "go"}], tools=OPENAI_TOOLS)
        assert r.choices[0].message.tool_calls[0].function.name == "bash"
        a = anthropic.Anthropic(base_url=gw.url, api_key=gw.key, max_retries=0)
        msgs = [{"role": "user", "content": "go"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "bash", "input": {"command": "echo hi"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "hi"}]}]
        m = a.messages.create(model="x", max_tokens=50, messages=msgs, tools=ANTHROPIC_TOOLS)
        assert [b.name for b in m.content if b.type == "tool_use"] == ["write_file"]
        resp = gw.events("model_response")
        assert len(resp) == 2 and all(e.data["usage"]["counted"] is False for e in resp)  # upstream's own usage
        assert all(e.data["cost_usd"] > 0 for e in resp)
        assert upstream.session.tally.answered == 2  # really went upstream, authenticated with the upstream key
        assert [e.data["model"] for e in upstream.events("model_request")] == ["up-model", "up-model"]
    finally:
        gw.service.stop_sync()


def test_upstream_errors_pass_through(tmp_path: Path, upstream, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASSAY_UPSTREAM_API_KEY", "sk-wrong-upstream-key-00000")
    rec = GatewayRecord(backend="upstream", settings={"base_url": upstream.url + "/v1", "api": "openai",
                                                       "api_key_env": "ASSAY_UPSTREAM_API_KEY"})
    gw = start_gateway(tmp_path, rec, key="sk-front-0123456789abcdef")
    try:
        c = openai.OpenAI(base_url=gw.url + "/v1", api_key=gw.key, max_retries=0)
        with pytest.raises(openai.AuthenticationError):
            c.chat.completions.create(model="m", messages=[{"role": "user", "content": "go"}])
        assert gw.events("error")[0].data["reason"] == "upstream_error"
    finally:
        gw.service.stop_sync()
