"""The per-attempt budget meter: turns and tool calls, shared by the gateway and the worlds."""

from __future__ import annotations

import threading

from assay.harness.budget import BudgetMeter, Refusal
from assay.spec.budget import Budget, BudgetName


def test_unlimited_budget_never_refuses() -> None:
    m = BudgetMeter(Budget())
    for _ in range(100):
        assert m.before_turn() is None and m.charge_turn(3) is None and m.charge_tool_call() is None
    assert (m.turns, m.tool_calls, m.ended_by, m.hits) == (100, 400, None, [])


def test_turns_refused_once_spent() -> None:
    m = BudgetMeter(Budget(turns=2))
    for _ in range(2):
        assert m.before_turn() is None and m.charge_turn(0) is None
    assert m.before_turn() == Refusal(BudgetName.turns, 2, 2)
    assert m.ended_by is BudgetName.turns and m.turns == 2


def test_a_reply_past_the_tool_calls_is_refused_and_not_counted() -> None:
    m = BudgetMeter(Budget(tool_calls=3))
    assert m.charge_turn(2) is None
    assert m.charge_turn(2) == Refusal(BudgetName.tool_calls, 3, 2)  # 2 + 2 > 3: the whole reply
    assert (m.turns, m.tool_calls) == (1, 2)
    assert m.charge_turn(0) is None  # a final answer without calls is still delivered
    assert m.charge_tool_call() is None and m.charge_tool_call() == Refusal(BudgetName.tool_calls, 3, 3)
    assert m.tool_calls == 3 and m.hits == [BudgetName.tool_calls]


def test_zero_tool_calls_allows_none() -> None:
    m = BudgetMeter(Budget(tool_calls=0))
    assert m.charge_tool_call() is not None and m.charge_turn(1) is not None and m.charge_turn(0) is None


def test_the_first_budget_refused_is_the_one_that_ended_the_attempt() -> None:
    m = BudgetMeter(Budget(turns=1, tool_calls=1))
    m.hit(BudgetName.cost_usd)  # counted elsewhere (the gateway's tally), recorded here
    assert m.charge_turn(1) is None and m.before_turn() is not None and m.charge_tool_call() is not None
    assert m.hits == [BudgetName.cost_usd, BudgetName.turns, BudgetName.tool_calls]
    assert m.ended_by is BudgetName.cost_usd


def test_shared_by_threads_without_losing_a_count() -> None:
    m = BudgetMeter(Budget(tool_calls=500))
    refused: list[Refusal] = []

    def worker() -> None:
        for _ in range(100):
            r = m.charge_tool_call()
            if r is not None:
                refused.append(r)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.tool_calls == 500 and len(refused) == 300


def test_refusal_says_which_budget_and_how_much() -> None:
    r = Refusal(BudgetName.tool_calls, 3, 3)
    assert r.record() == {"budget": "tool_calls", "limit": 3, "used": 3}
    assert r.message("tool calls are run") == ("the attempt's tool_calls budget is spent (3 of 3); "
                                              "no more tool calls are run")
