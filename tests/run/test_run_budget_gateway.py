"""The run budget's meter under real concurrency: several attempts' gateway sessions share one
meter, their calls go to a real upstream on loopback that holds every answer until all of them
are in flight, so the limit is crossed with every call still open. The bound holds exactly
(spent < limit + calls in flight at the crossing x the dearest call), the sum is the upstream's
own usage, and the next call of any attempt is refused before it reaches the upstream."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from assay.harness.budget import BudgetMeter
from assay.run_budget.meter import RunBudgetMeter
from assay.spec.budget import Budget
from assay.spec.run_budget import RunBudget
from tests.gateway.fake_upstream import Upstream
from tests.gateway.test_streaming import body_for, gateway_on

N = 6
PRICES = (3.0, 15.0)  # USD per million input / output tokens, as gateway_on sets them


@dataclass
class Gathering(Upstream):
    """An upstream that says when ``expect`` requests have arrived (all admitted by the gateway)."""

    expect: int = N
    arrived: threading.Event = field(default_factory=threading.Event)
    _seen: int = 0

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            with self._lock:
                self._seen += 1
                if self._seen == self.expect:
                    self.arrived.set()
        await super().__call__(scope, receive, send)


@pytest.mark.parametrize("limit", [RunBudget(max_tokens=1), RunBudget(max_cost_usd=1e-9)])
def test_calls_in_flight_at_the_crossing_bound_the_overshoot(tmp_path: Path, limit: RunBudget) -> None:
    up = Gathering(hold=True).start()
    gw = gateway_on(tmp_path, up, "openai")
    meter = RunBudgetMeter(limit)
    sessions = [gw.session] + [gw.service.open_session(None, key=f"sk-attempt-{i:02d}-0123456789abcdef") for i in range(1, N)]
    for s in sessions:
        s.meter = BudgetMeter(Budget(), run=meter)  # one attempt each, one run budget for all

    async def call(c: httpx.AsyncClient, key: str) -> httpx.Response:
        return await c.post(gw.url + "/v1/chat/completions", json=body_for("openai-chat"),
                            headers={"Authorization": f"Bearer {key}"})

    async def main() -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=60, trust_env=False) as c:
            calls = [asyncio.create_task(call(c, s.key)) for s in sessions]
            assert await asyncio.to_thread(up.arrived.wait, 60), "the calls never all reached the upstream"
            up.release()  # every call is admitted and open: now they finish together
            return await asyncio.gather(*calls)

    try:
        answers = asyncio.run(main())
        assert [r.status_code for r in answers] == [200] * N and all(b"[DONE]" in r.content for r in answers)
        snap = meter.snapshot()
        assert snap.reached == ("tokens" if limit.max_tokens else "cost_usd")
        assert (snap.calls, snap.crossing_in_flight, snap.in_flight) == (N, N, 0)
        assert snap.tokens == up.usage_input + up.usage_output  # every call charged once, exactly
        assert snap.cost_usd == pytest.approx((up.usage_input * PRICES[0] + up.usage_output * PRICES[1]) / 1e6)
        if limit.max_tokens:
            assert limit.max_tokens <= snap.tokens < limit.max_tokens + snap.crossing_in_flight * snap.dearest_call_tokens
        else:
            assert limit.max_cost_usd <= snap.cost_usd < limit.max_cost_usd + snap.crossing_in_flight * snap.dearest_call_usd

        # the next call of any attempt: refused before the upstream, in the wire's own error shape
        r = httpx.post(gw.url + "/v1/chat/completions", json=body_for("openai-chat", stream=False),
                       headers={"Authorization": f"Bearer {sessions[-1].key}"}, trust_env=False, timeout=30)
        assert r.status_code == 400 and r.json()["error"]["type"] == "budget_exceeded"
        assert "the run's budget is spent" in r.json()["error"]["message"]
        assert up.requests == N and meter.snapshot().refused == 1
        assert sessions[-1].tally.exceeded == ["run_budget"] and sessions[0].tally.exceeded == []
    finally:
        gw.service.stop_sync()
        up.stop()


def test_meter_bound_holds_for_threads_racing_admit_and_settle() -> None:
    """Real threads admitting and settling with no order between them: the sum never passes
    the limit by more than the calls in flight at the crossing."""
    meter = RunBudgetMeter(RunBudget(max_tokens=1000))
    start = threading.Barrier(8)
    seen: list[int] = []

    def worker(cost: int) -> None:
        start.wait()
        while meter.admit() is None:
            meter.settle(0.0, cost)
        seen.append(cost)

    threads = [threading.Thread(target=worker, args=(7 + i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    snap = meter.snapshot()
    assert len(seen) == 8 and snap.refused == 8 and snap.in_flight == 0
    assert 1000 <= snap.tokens < 1000 + snap.crossing_in_flight * snap.dearest_call_tokens
    assert 1 <= snap.crossing_in_flight <= 8


def test_a_meter_that_starts_spent_refuses_at_once_and_says_so() -> None:
    meter = RunBudgetMeter(RunBudget(max_cost_usd=0.5), cost_usd=0.5)
    assert meter.reached and meter.reached_at_start
    refusal = meter.admit()
    assert refusal is not None and refusal.record()["scope"] == "run" and refusal.used == 0.5
    assert meter.snapshot().reached_at_start and meter.snapshot().in_flight == 0
