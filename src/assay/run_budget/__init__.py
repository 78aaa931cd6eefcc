"""The run budget (--max-cost, --max-tokens) while a run spends it: the meter every model call of
the run is admitted and settled on, and the log of its stops and limit changes in the run
directory (docs/gateway.md, its run budget section). Declared in spec/run_budget.py; the
engine's stop is run/budget_stop.py.
"""
