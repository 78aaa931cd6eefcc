"""The admission gate `assay ctl` steers: a paused gate admits nothing, a lowered limit stops
nothing in flight but holds the next ones back, a stop ends every waiter (no sleeps: each step
waits for the loop to have run every ready task)."""

from __future__ import annotations

import asyncio

import pytest

from assay.run.admission import Capacity, RunStopped


async def settle() -> None:
    for _ in range(20):  # every ready callback gets its turn
        await asyncio.sleep(0)


def test_pause_jobs_and_stop() -> None:
    async def main() -> None:
        cap = Capacity(2)
        inside: list[str] = []
        leave = {n: asyncio.Event() for n in "abcd"}

        async def trial(n: str) -> str:
            try:
                async with cap.slot():
                    inside.append(n)
                    await leave[n].wait()
                return n
            except RunStopped:
                return f"{n} stopped"

        a, b = asyncio.create_task(trial("a")), asyncio.create_task(trial("b"))
        await settle()
        assert inside == ["a", "b"]
        await cap.change(limit=1, paused=True)
        c, d = asyncio.create_task(trial("c")), asyncio.create_task(trial("d"))
        leave["a"].set()
        await settle()
        assert inside == ["a", "b"] and cap.in_use == 1  # paused: nothing new, b still runs
        await cap.change(paused=False)
        await settle()
        assert inside == ["a", "b"]  # limit 1 and b holds it
        leave["b"].set()
        await settle()
        assert inside == ["a", "b", "c"]
        await cap.change(stop=True)
        await settle()
        assert await d == "d stopped"
        with pytest.raises(RunStopped):
            await cap.admit()
        leave["c"].set()
        assert [await a, await b, await c] == ["a", "b", "c"]
        await cap.idle()

    asyncio.run(main())
