"""Being a good client of a real upstream: a per-model concurrency cap, a per-model token-bucket
rate limit, and retries of 429/5xx with exponential back-off and full jitter.

Retries are the gateway's own business: the agent sees one call (counted once, budgets checked
once), and every retry is recorded in the attempt's trace as an ``upstream_retry`` log event.
Injected faults (``faults:``) are answered before the backend and are never retried here.

Settings live in the gateway record (bound into the manifest)::

    settings:
      limits: {"*": {max_concurrency: 16, requests_per_s: 5, burst: 10}, "gpt-x": {max_concurrency: 2}}
      retry: {max_retries: 4, base_s: 0.5, max_s: 20, statuses: [429, 500, 502, 503, 504, 529]}
"""

from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass, field
from typing import Any

DEFAULT_MAX_CONCURRENCY = 16
RETRY_STATUSES = (408, 409, 429, 500, 502, 503, 504, 529)


@dataclass(frozen=True)
class RetryPolicy:
    """Exponential back-off with full jitter (AWS architecture blog, 2015), never shorter than the
    upstream's Retry-After and never longer than ``max_s``."""

    max_retries: int = 4
    base_s: float = 0.5
    max_s: float = 20.0
    statuses: tuple[int, ...] = RETRY_STATUSES

    @staticmethod
    def from_settings(d: dict[str, Any] | None) -> "RetryPolicy":
        d = dict(d or {})
        if "statuses" in d:
            d["statuses"] = tuple(int(s) for s in d["statuses"])
        return RetryPolicy(**d)

    def delay(self, retry: int, retry_after: str | None, rng: random.Random) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first)."""
        jittered = rng.uniform(0, min(self.max_s, self.base_s * (2 ** retry)))
        hinted = _seconds(retry_after)
        return min(self.max_s, max(jittered, hinted if hinted is not None else 0.0))


def _seconds(retry_after: str | None) -> float | None:
    if not retry_after:
        return None
    try:
        return max(0.0, float(retry_after))
    except ValueError:
        return None  # an HTTP date: fall back to our own back-off


class TokenBucket:
    """``rate`` requests per second on average, at most ``burst`` at once after a quiet spell."""

    def __init__(self, rate: float, burst: float | None = None):
        self.rate = float(rate)
        self.capacity = float(burst if burst is not None else max(1.0, rate))
        self.tokens = self.capacity
        self.stamp = time.monotonic()
        self._lock = asyncio.Lock()

    async def take(self) -> float:
        """Wait for one token; returns the seconds waited."""
        waited = 0.0
        async with self._lock:  # first come, first served
            while True:
                now = time.monotonic()
                self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
                self.stamp = now
                if self.tokens >= 1.0:
                    self.tokens -= 1.0
                    return waited
                need = (1.0 - self.tokens) / self.rate
                waited += need
                await asyncio.sleep(need)  # pacing a real upstream, not synchronising anything


@dataclass
class ModelLimit:
    """The concurrency cap and the rate limit of one upstream model."""

    max_concurrency: int = DEFAULT_MAX_CONCURRENCY
    requests_per_s: float | None = None
    burst: float | None = None
    _sem: asyncio.Semaphore | None = field(default=None, repr=False)
    _bucket: TokenBucket | None = field(default=None, repr=False)
    in_flight: int = 0
    waiting: int = 0

    async def acquire(self) -> float:
        """Take a slot (and a token); returns the seconds spent waiting for them."""
        if self._sem is None:
            self._sem = asyncio.Semaphore(max(1, int(self.max_concurrency)))
            if self.requests_per_s:
                self._bucket = TokenBucket(self.requests_per_s, self.burst)
        t0 = time.monotonic()
        self.waiting += 1
        try:
            await self._sem.acquire()
            try:
                if self._bucket is not None:
                    await self._bucket.take()
            except BaseException:
                self._sem.release()
                raise
        finally:
            self.waiting -= 1
        self.in_flight += 1
        return time.monotonic() - t0

    def release(self) -> None:
        assert self._sem is not None
        self.in_flight -= 1
        self._sem.release()


class UpstreamLimits:
    """Per-model limits, from the record's ``limits`` setting (``"*"`` for models not named)."""

    def __init__(self, settings: dict[str, Any] | None):
        self.settings = {k: dict(v) for k, v in (settings or {}).items()}
        self.models: dict[str, ModelLimit] = {}
        self.backing_off = 0  # requests currently sleeping before a retry (shown by live progress)

    def for_model(self, model: str) -> ModelLimit:
        lim = self.models.get(model)
        if lim is None:
            conf = self.settings.get(model) or self.settings.get("*") or {}
            lim = self.models[model] = ModelLimit(**conf)
        return lim
