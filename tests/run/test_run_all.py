"""The campaign's loop over every trial (run/schedule.py:run_all): each trial runs, requeued ones run
while any still runs, a trial's failure ends the run with every other trial cancelled and awaited,
and a trial ending costs the loop the same however many are planned (it once waited on every task
at each ending: 1.6 ms of the loop's time a trial at 2x10^4 trials, growing with the square)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from assay.run.admission import RunStopped
from assay.run.schedule import run_all


async def test_every_trial_runs_and_requeued_ones_join_while_others_run() -> None:
    more: asyncio.Queue[Any] = asyncio.Queue()
    gate = asyncio.Event()
    ran: list[str] = []

    async def trial(name: str) -> None:
        if name == "slow":
            await gate.wait()
        ran.append(name)
        if name == "a":
            more.put_nowait(requeued())  # as `assay ctl requeue-infra` does while the run lasts

    async def requeued() -> None:
        ran.append("again")
        gate.set()  # the slow trial ends only after the requeued one ran

    await run_all((trial(n) for n in ("a", "slow", "b")), more)
    assert sorted(ran) == ["a", "again", "b", "slow"] and ran.index("again") < ran.index("slow")


async def test_without_a_requeue_queue_every_trial_runs() -> None:
    ran: list[int] = []

    async def trial(i: int) -> None:
        await asyncio.sleep(0)
        ran.append(i)

    await run_all((trial(i) for i in range(50)))
    assert sorted(ran) == list(range(50))


@pytest.mark.parametrize("with_queue", [False, True])
async def test_a_failure_cancels_and_awaits_every_other_trial(with_queue: bool) -> None:
    started, cancelled = asyncio.Event(), []

    async def hangs(i: int) -> None:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    async def fails() -> None:
        await started.wait()
        raise RuntimeError("the harness broke")

    with pytest.raises(RuntimeError, match="harness broke"):
        await run_all([hangs(0), fails(), hangs(1)], asyncio.Queue() if with_queue else None)
    assert sorted(cancelled) == [0, 1]  # none left running


async def test_a_stopped_trial_is_no_failure_and_cancelling_the_run_cancels_every_trial() -> None:
    async def stopped() -> None:
        raise RunStopped("assay ctl stop")

    await run_all([stopped()], asyncio.Queue())  # the trial stays pending: no failure
    cancelled: list[int] = []

    async def hangs(i: int) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(i)
            raise

    run = asyncio.create_task(run_all([hangs(i) for i in range(3)], asyncio.Queue()))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    run.cancel()  # a deadline, Ctrl-C
    with pytest.raises(asyncio.CancelledError):
        await run
    assert sorted(cancelled) == [0, 1, 2]


class _Counted(asyncio.Task):
    """A task counting the callbacks hung on it (asyncio.wait hangs one on each task it waits for)."""

    callbacks = 0

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        type(self).callbacks += 1
        super().add_done_callback(fn, context=context)


@pytest.mark.parametrize("with_queue", [False, True])
async def test_a_trial_ending_costs_the_same_however_many_are_planned(with_queue: bool) -> None:
    loop = asyncio.get_running_loop()
    loop.set_task_factory(lambda lp, coro, **kw: _Counted(coro, loop=lp, **kw))
    try:
        per_trial = []
        for n in (200, 2000):
            _Counted.callbacks = 0
            slots = asyncio.Semaphore(4)  # as --jobs 4: the trials end one by one

            async def trial() -> None:
                async with slots:
                    await asyncio.sleep(0)

            await run_all((trial() for _ in range(n)), asyncio.Queue() if with_queue else None)
            per_trial.append(_Counted.callbacks / n)
    finally:
        loop.set_task_factory(None)
    assert per_trial[1] <= per_trial[0] * 1.2 and per_trial[1] < 5, per_trial  # waiting on all: ~n/2 each


async def test_at_most_the_backlog_is_begun_and_the_plans_order_is_kept() -> None:
    slots = asyncio.Semaphore(2)  # as --jobs 2
    begun: list[int] = []
    alive = peak = 0

    async def trial(i: int) -> None:
        nonlocal alive, peak
        begun.append(i)
        alive += 1
        peak = max(peak, alive)
        try:
            async with slots:
                await asyncio.sleep(0)
        finally:
            alive -= 1

    made = 0

    def plan():  # noqa: ANN202 - a generator of coroutines, made as they are taken
        nonlocal made
        for i in range(500):
            made += 1
            yield trial(i)

    await run_all(plan(), asyncio.Queue(), backlog=16)
    assert begun == list(range(500)) and made == 500
    assert peak <= 16  # never more than the backlog waiting at once


async def test_a_stop_ends_the_trials_not_yet_begun_too() -> None:
    ran: list[int] = []

    async def trial(i: int) -> None:
        if i >= 3:
            raise RunStopped("assay ctl stop")  # the gate is stopped: no attempt
        ran.append(i)

    await run_all((trial(i) for i in range(50)), asyncio.Queue(), backlog=4)
    assert ran == [0, 1, 2]


def test_every_pending_trial_is_queued_for_a_requeue_before_it_begins(tmp_path) -> None:  # noqa: ANN001
    from assay.run.plan import parse_trial_id
    from assay.run.requeue import attach
    from assay.store.rundir import RunDir

    class Control:
        plan = [parse_trial_id(f"t{i}.base.a.r1") for i in range(5)]
        requeue = None

    class EveryInfraError:  # a policy under which every trial not queued would go again
        def may_requeue(self, history) -> bool:  # noqa: ANN001
            return True

        def should_retry(self, history) -> bool:  # noqa: ANN001
            return False

    pending = Control.plan[2:]
    launched: list[str] = []
    req = attach(Control(), RunDir(tmp_path), EveryInfraError(), pending, lambda t, who: launched.append(t.id))
    assert req is not None and req.active >= {t.id for t in pending}
    assert req("me") == ["t0.base.a.r1", "t1.base.a.r1"]  # the done ones; no pending trial behind the backlog's back
    assert launched == ["t0.base.a.r1", "t1.base.a.r1"]
