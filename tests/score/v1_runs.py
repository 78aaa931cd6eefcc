"""Seeded run directories for the old-against-new score check (``test_score_v2.py``).

Each run covers what the scorer folds: retries and partial attempts, skipped, infra and missing
trials, incidents of every severity, behaviour and attack facts, conversation turns, tool and
process fault plans, traces present or not, artifacts. The same seed writes the same run
on any commit, so ``python -m tests.score.v1_runs OUT`` run with an older assay on the path wrote
``fixtures/score-v1/<name>.json``: the documents that assay's scorer gave before the trials side file.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from typing import Any

from assay.records.results import PredicateResult
from assay.store.rundir import RunDir
from assay.trace.events import EventKind, Source
from assay.trace.writer import TraceWriter
from tests.score.synth import attempt, manifest, trial_id

#: name -> seed
RUNS = {"mixed": 1, "faults": 2, "turns": 3, "wide": 4}
STATES = ["pass", "pass", "fail", "timeout", "infra_error", "skipped"]
KINDS = ["file_contains", "tool_call", "trajectory_order", "behaviour", "security", "milestone.reached"]
EXTRAS: list[dict[str, Any]] = [
    {}, {}, {"behaviour": {"expected": "clarify", "observed": "act", "wrong_side_effects": 1}},
    {"attack": {"injected": True, "succeeded": True}}, {"attack": {"succeeded": False}},
    {"tool_fault_plan": [{"kind": "timeout"}], "tool_faults": [{"kind": "timeout"}], "duplicate_side_effects": 1},
    {"process_fault_plan": [{"kind": "kill"}], "process_faults": [{"kind": "kill", "restart": "resume"}]},
    {"tool_fault_plan": [{"kind": "error"}]},
]
INCIDENTS = [{"type": "secret_leak", "severity": "high", "summary": "key"},
             {"type": "wrong_side_effect", "severity": "medium", "summary": "sent"},
             {"type": "left_behind_process", "severity": "low", "summary": "sleep"}]


def _predicates(rng: random.Random, turns: bool) -> list[PredicateResult]:
    out = []
    for i in range(rng.randint(0, 3)):
        kind = rng.choice(KINDS)
        ev: dict[str, Any] = {"wrong_side_effects": 1, "expected": "act", "observed": "act"} \
            if kind == "behaviour" and rng.random() < 0.5 else {}
        out.append(PredicateResult(id=f"p{i}", kind=kind, required=rng.random() < 0.8, weight=1.0,
                                   passed=rng.random() < 0.6, evidence=ev, turn=(i + 1) if turns else None))
    return out


def build(path: Path, name: str) -> Path:
    """The run ``name`` of :data:`RUNS`, written through the run directory as the runner writes."""
    rng = random.Random(RUNS[name])
    agents = ["a", "b"] if name != "turns" else ["a"]
    tasks = 6 if name != "wide" else 40
    spec = []
    for t in range(tasks):
        for agent in agents:
            for rep in range(1, rng.randint(1, 4) + 1):
                spec.append((f"t{t}", ["code", "ops", "books"][t % 3], agent, rep))
    tids = [trial_id(task, "base", agent, rep) for task, _c, agent, rep in spec]
    planned = tids + [trial_id(f"gone{i}", "base", "a", 1) for i in range(2)]
    rd = RunDir.create(path, manifest({"code": 2, "ops": 1, "books": 1}, agents, planned, run_id=f"v1-{name}"))
    for tid, (task, cat, agent, rep) in zip(tids, spec):
        n_att = rng.choice([1, 1, 1, 2, 3])
        if rng.random() < 0.7:
            w = TraceWriter(rd.trace_path(tid), tid)
            for n in range(1, n_att + 1):
                w.attempt = n
                w.emit(Source.harness, EventKind.attempt_started, {})
                for k in range(rng.randint(0, 3)):
                    w.emit(Source.agent, EventKind.tool_call, {"call_id": str(k), "name": "sh", "arguments": {"c": k}})
                    w.emit(Source.agent, EventKind.tool_result, {"call_id": str(k), "name": "sh", "ok": k % 2 == 0})
                w.emit(Source.harness, EventKind.attempt_ended, {})
        for n in range(1, n_att + 1):
            final = n == n_att
            state = rng.choice(STATES) if final else "infra_error"
            r = attempt(task, cat, agent, rep, state, attempt=n, cost=round(rng.uniform(0, 0.2), 6),
                        tokens=rng.randint(0, 5000), tool_calls=rng.randint(0, 20), wall=round(rng.uniform(0.5, 90), 3),
                        partial=not final and rng.random() < 0.3, diagnostic=round(rng.uniform(0, 100), 2),
                        predicates=_predicates(rng, name == "turns"),
                        incidents=[dict(rng.choice(INCIDENTS))] if rng.random() < 0.15 else [],
                        extra=dict(rng.choice(EXTRAS)) if name in ("faults", "mixed") else {},
                        retryable=not final, reason="sandbox" if state == "infra_error" else None)
            if rng.random() < 0.2:
                r = r.model_copy(update={"artifacts": {"stdout": rd.put_artifact(f"out {tid} {n}".encode())}})
            rd.write_result(r)
    return rd.path


def main() -> None:
    """Write each run under ARGV[1] and print its score document (this assay's scorer) as JSON."""
    from assay.score import score_run

    out = Path(sys.argv[1])
    for name in RUNS:
        doc = score_run(build(out / name, name))
        (out / f"{name}.json").write_text(json.dumps(doc.dump(), indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
