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


def test_slots_go_in_the_order_asked_and_a_cancelled_waiter_loses_nothing() -> None:
    async def main() -> None:
        cap = Capacity(1)
        order: list[int] = []
        leave = asyncio.Event()

        async def trial(i: int) -> None:
            async with cap.slot():
                order.append(i)
                if i == 0:
                    await leave.wait()

        tasks = [asyncio.create_task(trial(i)) for i in range(6)]
        await settle()
        assert order == [0] and cap.in_use == 1
        tasks[2].cancel()  # cancelled while it waits: skipped when its turn comes
        await settle()
        leave.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert order == [0, 1, 3, 4, 5] and cap.in_use == 0
        # granted as it was cancelled: the slot goes on to the next waiter
        hold = asyncio.Event()

        async def holder() -> None:
            async with cap.slot():
                await hold.wait()

        h = asyncio.create_task(holder())
        await settle()
        late, after = asyncio.create_task(trial(10)), asyncio.create_task(trial(11))
        await settle()
        hold.set()
        await asyncio.sleep(0)  # the holder releases: slot handed to `late`, which has not run yet
        late.cancel()
        await asyncio.gather(h, late, after, return_exceptions=True)
        assert order[-1] == 11 and cap.in_use == 0
        await cap.idle()

    asyncio.run(main())


def test_a_release_wakes_one_waiter_however_many_wait() -> None:
    async def main(waiting: int) -> float:
        loop = asyncio.get_running_loop()
        cap = Capacity(1)
        calls = 0
        plain = loop.call_soon

        def counted(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202 - the loop's own signature
            nonlocal calls
            calls += 1
            return plain(*args, **kwargs)

        async def trial() -> None:
            async with cap.slot():
                await asyncio.sleep(0)

        tasks = [asyncio.create_task(trial()) for _ in range(waiting)]
        await settle()
        loop.call_soon = counted  # type: ignore[method-assign]
        try:
            await asyncio.gather(*tasks)
        finally:
            loop.call_soon = plain  # type: ignore[method-assign]
        return calls / waiting

    few, many = asyncio.run(main(50)), asyncio.run(main(500))
    assert many <= few * 1.3, (few, many)  # waking every waiter at each release: ~10x more


def test_idle_returns_when_the_last_slot_goes_back_even_from_a_cancelled_grant() -> None:
    async def main() -> None:
        cap = Capacity(1)
        hold = asyncio.Event()

        async def holder() -> None:
            async with cap.slot():
                await hold.wait()

        async def trial() -> None:
            async with cap.slot():
                pass

        h = asyncio.create_task(holder())
        await settle()
        waiting = asyncio.create_task(trial())
        await settle()
        idle = asyncio.create_task(cap.idle())
        hold.set()
        await asyncio.sleep(0)  # the holder gives its slot to the waiter, which has not run yet
        waiting.cancel()  # granted and cancelled: its slot is the last one held
        await asyncio.gather(h, waiting, return_exceptions=True)
        await asyncio.wait_for(idle, 30)  # woken by that release, not left waiting
        assert cap.in_use == 0

    asyncio.run(main())
