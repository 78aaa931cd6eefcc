"""Each fault kind is injected deterministically on the planned call and is an event in the trace."""

from __future__ import annotations

import httpx
import openai
import pytest

from assay.gateway.faults import FaultPlan
from assay.spec.faults import FaultKind, FaultSpec
from tests.gateway.conftest import OPENAI_TOOLS, Gateway

BODY = {"model": "m", "messages": [{"role": "user", "content": "go"}], "tools": OPENAI_TOOLS}


def plan(gw: Gateway, *faults: FaultSpec) -> None:
    gw.session.faults = FaultPlan(list(faults))


def post(gw: Gateway, body: dict | None = None, timeout: float = 30) -> httpx.Response:
    return httpx.post(gw.url + "/v1/chat/completions", json=body or BODY, timeout=timeout,
                      headers={"Authorization": f"Bearer {gw.key}"})


def test_rate_limit_on_second_call_with_retry_after(gateway: Gateway) -> None:
    plan(gateway, FaultSpec(kind=FaultKind.rate_limit, on_call=2, retry_after_s=3))
    assert post(gateway).status_code == 200
    r = post(gateway)
    assert r.status_code == 429 and r.headers["retry-after"] == "3" and r.json()["error"]["type"] == "rate_limit_exceeded"
    assert post(gateway).status_code == 200
    ev, = gateway.events("fault_injected")
    assert ev.data["kind"] == "rate_limit" and ev.data["call"] == 2 and ev.data["retry_after_s"] == 3
    assert gateway.session.tally.answered == 2 and gateway.session.tally.calls == 3


def test_server_error_times_and_status(gateway: Gateway) -> None:
    plan(gateway, FaultSpec(kind=FaultKind.server_error, on_call=1, times=2, status=502))
    assert [post(gateway).status_code for _ in range(3)] == [502, 502, 200]
    assert [e.data["call"] for e in gateway.events("fault_injected")] == [1, 2]


def test_truncated_body_drops_connection_mid_body(gateway: Gateway) -> None:
    plan(gateway, FaultSpec(kind=FaultKind.truncated, on_call=1))
    with pytest.raises(httpx.RemoteProtocolError):
        post(gateway)
    assert post(gateway).status_code == 200


def test_truncated_stream_stops_mid_frame(gateway: Gateway) -> None:
    plan(gateway, FaultSpec(kind=FaultKind.truncated, on_call=1))
    r = post(gateway, {**BODY, "stream": True})
    assert r.status_code == 200 and b"[DONE]" not in r.content and not r.content.endswith(b"\n\n")


def test_malformed_body_is_not_json_and_sdk_fails(gateway: Gateway) -> None:
    plan(gateway, FaultSpec(kind=FaultKind.malformed, on_call=1))
    c = openai.OpenAI(base_url=gateway.url + "/v1", api_key=gateway.key, max_retries=0)
    with pytest.raises(Exception):
        c.chat.completions.create(**BODY)
    assert gateway.events("fault_injected")[0].data["kind"] == "malformed"


def test_added_latency_answers_correctly(gateway: Gateway) -> None:
    plan(gateway, FaultSpec(kind=FaultKind.latency, on_call=1, delay_s=0.3))
    r = post(gateway)
    assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] == "Looking."
    assert gateway.events("fault_injected")[0].data["delay_s"] == 0.3


def test_timeout_hangs_past_client_patience(gateway: Gateway) -> None:
    plan(gateway, FaultSpec(kind=FaultKind.timeout, on_call=1, delay_s=5))
    with pytest.raises(httpx.ReadTimeout):
        post(gateway, timeout=0.5)
    assert gateway.events("fault_injected")[0].data["hang_s"] == 5
    assert post(gateway).status_code == 200  # the next call is served while the first still hangs


def test_plan_is_deterministic() -> None:
    p = FaultPlan([FaultSpec(kind=FaultKind.server_error, on_call=3, times=2),
                   FaultSpec(kind=FaultKind.rate_limit, on_call=4)])
    assert [getattr(p.for_call(n), "kind", None) for n in range(1, 7)] == [
        None, None, FaultKind.server_error, FaultKind.server_error, None, None]
