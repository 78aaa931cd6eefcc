"""The head's ServiceHub as plain Python (what the Ray actor runs): its one run-budget meter
admits and settles the calls of every attempt's session, whatever node the attempt is on, and a
lost attempt's sessions are closed with what they kept for it handed back (the gateway's
recording, so a resume counts what the lost attempt spent)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
import pytest

from assay.run import RunOptions, start_run
from assay.run.cluster.hub import AttemptKey, ServiceHub
from assay.run_budget.meter import RunBudgetMeter
from assay.spec.run_budget import RunBudget
from tests.gateway.test_run_e2e import make_suite
from tests.judge.conftest import fake_judge  # noqa: F401 - the fixture, for the judge case
from tests.run.cluster.test_ray_worlds import outside_address
from tests.gateway.test_streaming import body_for


async def test_the_hubs_meter_counts_every_attempt_and_a_lost_attempt_keeps_its_recording(tmp_path: Path) -> None:
    done = await asyncio.to_thread(start_run, RunOptions(suite=make_suite(tmp_path / "suite"), agents=["reference"],
                                                         model="scripted", sandbox="host", out=tmp_path / "run"))
    manifest = done.manifest
    start = RunBudgetMeter(RunBudget(max_tokens=10_000), tokens=5).snapshot()  # 5 spent before this session
    hub = ServiceHub(manifest.model_dump_json(), root=tmp_path / "hub", run_budget=start, run_dir=str(done.run_dir.path))
    info = await hub.start()
    try:
        gw = info["services"].index("gateway")
        trial = manifest.plan.trials[0]
        keys = [AttemptKey(trial, n, "calc", "base", "reference") for n in (2, 3)]  # two attempts, any nodes
        opened = [await hub.open(k, gw) for k in keys]
        async with httpx.AsyncClient(timeout=60, trust_env=False) as c:
            for o in opened:
                assert o is not None and o.wiring.gateway is not None
                ep = o.endpoints[0]
                r = await c.post(f"http://{ep.host}:{ep.port}/v1/chat/completions", json=body_for("openai-chat", stream=False),
                                 headers={"Authorization": f"Bearer {o.wiring.gateway.api_key}"})
                assert r.status_code == 200, r.text
        spend = await hub.run_spend()
        assert spend is not None and spend.calls == 2 and spend.tokens > 5

        closed = await hub.close(keys[0], gw)  # a finished attempt: its usage is what the meter charged
        files = await hub.abandon(keys[1].id)  # a lost one: its recording comes back
        recorded = [json.loads(line) for line in files["attempts/3/gateway.session.jsonl"].decode().splitlines()]
        usage = recorded[0]["reply"]["usage"]
        assert closed.usage is not None
        both = closed.usage.input_tokens + closed.usage.output_tokens + usage["input_tokens"] + usage["output_tokens"]
        assert spend.tokens == 5 + both
        assert set(files) == {"attempts/3/gateway.session.jsonl"}  # nothing of another attempt
        assert await hub.abandon(keys[1].id) == {}  # once
    finally:
        await hub.stop()


async def test_the_hub_hands_back_what_its_judge_spent(tmp_path: Path, fake_judge,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """On a cluster the judge runs in the hub, not the head: a verifier on another node is given
    the judge on the head's address (not the hub's loopback), and the head records the judge's
    spend in the budget log from what the hub hands back (else a resumed run's meter misses it)."""
    from assay.judge.calibrate import load_judge
    from assay.judge.client import JudgeClient
    from tests.judge.test_calibrate import faithful
    from tests.judge.test_judge_run import judged_suite

    fj = fake_judge(faithful)
    done = await asyncio.to_thread(start_run, RunOptions(suite=judged_suite(tmp_path, fj.model_arg), agents=["oracle"],
                                                         judge_model=fj.model_arg, sandbox="host", out=tmp_path / "run"))
    address = outside_address()
    if address is None:
        pytest.skip("this machine has no address but loopback")
    monkeypatch.setenv("ASSAY_GATEWAY_HOST", "0.0.0.0")  # as `assay k8s render` sets it on the head
    hub = ServiceHub(done.manifest.model_dump_json(), root=tmp_path / "hub", run_dir=str(done.run_dir.path),
                     address=address)
    info = await hub.start()
    try:
        assert (await hub.judge_spend()).model_calls == 0
        trial = done.manifest.plan.trials[0]
        key = AttemptKey(trial, 2, "explain-refusal", "base", "oracle")
        judge_index = info["services"].index("judge")
        assert await hub.open(key, judge_index) is not None
        conn = (await hub.close(key, judge_index)).verifier_extra.judge
        assert httpx.URL(conn.url).host == address  # what a verifier on a worker node is handed
        spec = load_judge(tmp_path / "suite" / "tasks" / "explain-refusal" / "verify" / "judge.yaml")
        client = JudgeClient(conn.url, conn.key, conn.model, spec)  # as a verifier on any node calls it
        assert await asyncio.to_thread(client.pairwise, "Why?", "because it is late", "no") == "A"
        spent = await hub.judge_spend()
        assert spent is not None and (spent.model_calls, spent.input_tokens + spent.output_tokens) == (1, 57)
    finally:
        await hub.stop()
