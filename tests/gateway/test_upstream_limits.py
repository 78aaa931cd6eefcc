"""Per-model concurrency cap, token bucket and back-off policy of the upstream backend."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from assay.errors import UsageError
from assay.gateway.config import gateway_record_from_cli
from assay.gateway.upstream_limits import ModelLimit, RetryPolicy, TokenBucket, UpstreamLimits


async def test_concurrency_cap_holds_the_third_request_until_a_slot_frees() -> None:
    lim = UpstreamLimits({"*": {"max_concurrency": 2}, "small": {"max_concurrency": 1}}).for_model("big")
    await lim.acquire()
    await lim.acquire()
    third = asyncio.create_task(lim.acquire())
    await asyncio.sleep(0)  # let the task run up to its wait (a scheduling yield, no timing)
    assert not third.done() and lim.waiting == 1 and lim.in_flight == 2
    lim.release()
    await third
    assert lim.in_flight == 2 and lim.waiting == 0


def test_models_get_their_own_limits() -> None:
    limits = UpstreamLimits({"*": {"max_concurrency": 3}, "small": {"max_concurrency": 1}})
    assert limits.for_model("small").max_concurrency == 1
    assert limits.for_model("other").max_concurrency == 3
    assert limits.for_model("small") is limits.for_model("small")


async def test_token_bucket_spends_its_burst_then_waits() -> None:
    # one token a second: the third take waits unless the loop stalls a whole second between two
    # takes (at 1,000 a second, a 1 ms stall on a loaded machine refilled it and the test failed)
    bucket = TokenBucket(rate=1.0, burst=2)
    assert await bucket.take() == 0.0 and await bucket.take() == 0.0
    assert await bucket.take() > 0.5  # the third had to wait for a token


def test_backoff_is_jittered_capped_and_honours_retry_after() -> None:
    p = RetryPolicy(max_retries=5, base_s=1.0, max_s=8.0)
    rng = random.Random(1)
    waits = [p.delay(r, None, rng) for r in range(6) for _ in range(50)]
    assert all(0.0 <= w <= 8.0 for w in waits) and len(set(waits)) > 100  # full jitter, capped
    assert all(p.delay(0, "3", rng) >= 3.0 for _ in range(20))  # never earlier than the upstream asked
    assert p.delay(0, "600", rng) == 8.0  # but never longer than the cap
    assert p.delay(0, "Wed, 21 Oct 2015 07:28:00 GMT", rng) <= 1.0  # a date: our own back-off


def test_limits_file_is_checked_and_bound_into_the_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.spec.load import LoadedSuite

    f = tmp_path / "limits.yaml"
    f.write_text("limits: {'*': {max_concurrency: 4, requests_per_s: 2}}\nretry: {max_retries: 2}\n")
    monkeypatch.setenv("ASSAY_UPSTREAM_LIMITS", str(f))
    suite = LoadedSuite.__new__(LoadedSuite)
    rec = gateway_record_from_cli("upstream:http://127.0.0.1:9/v1#m", suite)
    assert rec.settings["limits"] == {"*": {"max_concurrency": 4, "requests_per_s": 2}}
    assert rec.settings["retry"] == {"max_retries": 2}
    f.write_text("limits: {'*': {max_concurency: 4}}\n")
    with pytest.raises(UsageError, match="limits.yaml.*max_concurency.*ASSAY_UPSTREAM_LIMITS"):
        gateway_record_from_cli("upstream:http://127.0.0.1:9/v1#m", suite)
    assert ModelLimit().max_concurrency >= 1
