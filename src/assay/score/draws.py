"""``random.Random.randrange(n)``, many at once: the same numbers in the same order from the same
generator state, so the paired bootstrap's intervals stay what they were, only sooner.

The bootstrap of a comparison draws ``resamples`` x units indices (2,000 x 26,000 for two runs of
10^3 tasks x 13 variants x 2 agents: 52 M calls of ``randrange``, 9 s at 2x10^5 trials). Python's
``randrange(n)`` takes ``k = n.bit_length()`` bits of one 32-bit Mersenne Twister word
(``getrandbits(k)``: the word's top ``k`` bits) and draws again while the number is ``n`` or more.
numpy's MT19937, set to the state of the Python generator, yields those very words in bulk; the
top bits and the rejections are then taken the same way, vectorised.

Used only where numpy is installed (the ``judge`` and ``data`` extras) and the draws are many; the
first use in a process checks itself against ``randrange`` and stands aside if they ever differ.
"""

from __future__ import annotations

import random
from typing import Any

#: words taken from the generator at once
CHUNK = 1 << 20


class RandBelow:
    """The stream of ``rng.randrange(n)`` results of one generator, ``n`` varying per call."""

    def __init__(self, rng: random.Random, np: Any) -> None:
        version, words, _gauss = rng.getstate()
        if version != 3 or len(words) != 625:
            raise ValueError("not a Mersenne Twister state")
        self.np = np
        self.bits = np.random.MT19937()
        self.bits.state = {"bit_generator": "MT19937",
                           "state": {"key": np.array(words[:624], dtype=np.uint32), "pos": words[624]}}
        self.buf = np.empty(0, dtype=np.uint64)
        self.pos = 0

    def take(self, n: int, count: int) -> list[int]:
        """The next ``count`` results of ``randrange(n)`` (1 <= n < 2**32: one word per draw)."""
        if not 1 <= n < 1 << 32:
            raise ValueError(f"randrange({n}) in bulk: n must be 1 to 2**32 - 1")
        if count == 0:
            return []
        np = self.np
        shift = 32 - n.bit_length()
        parts = []
        need = count
        while need:
            if self.pos >= len(self.buf):
                self.buf, self.pos = self.bits.random_raw(max(CHUNK, 2 * need)), 0
            window = self.buf[self.pos:self.pos + 2 * need + 64] >> np.uint64(shift)
            kept = window < n
            counted = np.cumsum(kept)
            if counted[-1] >= need:
                used = int(np.searchsorted(counted, need)) + 1  # the word giving the last result needed
                parts.append(window[:used][kept[:used]])
                self.pos += used
                need = 0
            else:
                parts.append(window[kept])
                self.pos += len(window)
                need -= int(counted[-1])
        return (parts[0] if len(parts) == 1 else np.concatenate(parts)).tolist()


_checked: bool | None = None


def _agrees(np: Any) -> bool:
    """Whether this Python's ``randrange`` takes its words as :class:`RandBelow` does (rejections
    included: sizes just past a power of two reject nearly half the words)."""
    sizes = (1, 2, 3, 7, 1000, 1025, (1 << 16) + 1, (1 << 31) + 1, (1 << 32) - 1)
    ref, fast = random.Random(20261207), RandBelow(random.Random(20261207), np)
    return all(fast.take(n, 300) == [ref.randrange(n) for _ in range(300)] for n in sizes)


def rand_below(rng: random.Random) -> RandBelow | None:
    """A bulk stream for ``rng`` (its state as it is now), or None: no numpy here, or it would not
    give ``randrange``'s numbers on this Python."""
    global _checked
    try:
        import numpy as np
    except ImportError:
        return None
    if _checked is None:
        _checked = _agrees(np)
    return RandBelow(rng, np) if _checked else None


__all__ = ["RandBelow", "rand_below"]
