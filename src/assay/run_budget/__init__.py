"""The run budget (--max-cost, --max-tokens) while a run spends it: the meter every model call of
the run is admitted and settled on, the log of its stops and limit changes in the run
directory (docs/gateway.md, its run budget section), and the stop record (stop.py). Declared in
spec/run_budget.py (records/manifest records it, and records sit below this room); the engine's
part of the stop, which needs the agents, the gateway and the judge, is run/budget_stop.py.
"""
