"""Harbor's multi-step tasks (``[[steps]]``): ordered steps in one shared environment, the agent
started afresh on each step's own ``steps/NAME/instruction.md`` (no shared context), each step
verified after it ran by its ``tests/test.sh`` (the task-level ``tests/`` uploaded first, the step's
files over it), the trial's reward the mean of the steps' (``multi_step_reward_strategy = "mean"``,
the default; a step with ``contributes_to_mean = false`` out of it) or the final step's (``final``).

In assay: a conversation with ``fresh_sessions`` whose turns are the steps (turn 1 the task's
prompt), each turn's reward script checked over the state kept after that turn, the last step's
as the task's final predicate (the state after the last turn is the final state). At assay's
threshold of 1.0 "the mean reaches 1" is "every counted step reaches 1", so a counted step is a
required predicate and an uncounted one is shown, not required. The oracle runs step N's
``solve.sh`` as turn N (``solution/step-N/``, ``turnN.sh``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.importers.common import copy_dir, names_reward, seconds, table
from assay.importers.harbor_offline import rewrite_offline
from assay.importers.report import TaskReport

STRATEGIES = ("mean", "final")


@dataclass(frozen=True)
class Step:
    name: str
    folder: Path
    instruction: str
    agent_timeout: float | None
    verifier_timeout: float | None
    counted: bool


def read_steps(src: Path, doc: dict[str, Any], rep: TaskReport) -> list[Step] | None:
    """The task's steps in order, or None (refused, with the step and the reason)."""
    strategy = doc.get("multi_step_reward_strategy", "mean")
    if strategy not in STRATEGIES:
        rep.refuse(f"multi_step_reward_strategy = {strategy!r}: Harbor knows {', '.join(STRATEGIES)}")
        return None
    raw = doc["steps"]
    if not isinstance(raw, list) or not all(isinstance(s, dict) for s in raw):
        rep.refuse("[[steps]] is not a list of tables")
        return None
    steps: list[Step] = []
    for i, s in enumerate(raw):
        name = s.get("name")
        if not isinstance(name, str) or not name or "/" in name or name.startswith("."):
            rep.refuse(f"steps[{i}].name = {name!r}: not a folder name under steps/")
            return None
        folder = src / "steps" / name
        instruction = folder / "instruction.md"
        if not instruction.is_file() or not instruction.read_text(errors="replace").strip():
            rep.refuse(f"steps/{name}/instruction.md is missing or empty: step {name!r} has no prompt")
            return None
        for what in ("environment", "setup"):
            if (folder / what).exists():
                rep.refuse(f"steps/{name}/{what}: files or a setup hook run into the shared environment before "
                           "the step are not mapped yet")
                return None
        verifier = table(s, "verifier")
        if verifier.get("environment_mode") == "separate" or isinstance(verifier.get("environment"), dict):
            rep.refuse(f"steps[{i}] ({name}): a step's separate verifier is not mapped yet")
            return None
        script = folder / "tests" / "test.sh"
        if not script.is_file() and not (src / "tests" / "test.sh").is_file():
            rep.refuse(f"steps/{name}/tests/test.sh is missing and there is no task-level tests/test.sh to fall "
                       "back to: no reward can be computed for that step")
            return None
        if not any(names_reward(d) for d in (folder / "tests", src / "tests") if d.is_dir()):
            rep.refuse(f"step {name!r}: its tests never name /logs/verifier/reward.txt or reward.json")
            return None
        try:
            agent_t = table(s, "agent").get("timeout_sec")
            verifier_t = verifier.get("timeout_sec")
            steps.append(Step(name, folder, instruction.read_text(errors="replace"),
                              None if agent_t is None else seconds(agent_t, f"steps[{i}].agent.timeout_sec"),
                              None if verifier_t is None else seconds(verifier_t, f"steps[{i}].verifier.timeout_sec"),
                              counted=strategy == "mean" and s.get("contributes_to_mean", True) is not False
                              or strategy == "final" and i == len(raw) - 1))
        except ValueError as e:
            rep.refuse(str(e))
            return None
        unread = sorted(k for k, v in s.items() if k not in ("name", "agent", "verifier", "contributes_to_mean")
                        and v not in (None, "", [], {}))
        if unread:
            rep.unmapped.append(f"steps[{i}] ({name}): not read by this importer: " + ", ".join(unread)
                                + (" (min_reward: later steps run all the same; the verdict is unchanged, every "
                                   "counted step must reach the threshold)" if "min_reward" in unread else ""))
    if not steps:
        rep.refuse("[[steps]] is empty")
        return None
    if not any(st.counted for st in steps):
        rep.refuse("no step counts towards the reward (contributes_to_mean = false on every step)")
        return None
    rep.mapped.append(f"[[steps]] ({len(steps)}) -> conversation with fresh_sessions: one turn per step, the agent "
                      f"started afresh on each step's instruction, the workspace kept; reward strategy {strategy!r}")
    return steps


def write_steps(src: Path, dst: Path, steps: list[Step], task: dict[str, Any], rep: TaskReport,
                agent_timeout: float | None, verifier_timeout: float, threshold: float) -> None:
    """Each step's tests under hidden/steps/NAME/tests (the task-level tests first, the step's over
    them), the conversation, the final predicate, the summed wall time and the oracle's scripts."""
    preds = []
    for st in steps:
        dest = dst / "hidden" / "steps" / st.name / "tests"
        if (src / "tests").is_dir():
            shutil.copytree(src / "tests", dest, symlinks=True)
        if (st.folder / "tests").is_dir():
            shutil.copytree(st.folder / "tests", dest, symlinks=True, dirs_exist_ok=True)
        rewrite_offline(st.folder / "tests" / "test.sh" if (st.folder / "tests" / "test.sh").is_file()
                        else src / "tests" / "test.sh", dest / "test.sh", rep, f"steps/{st.name}/tests/test.sh",
                        environment=src / "environment")
        pred: dict[str, Any] = {"id": f"reward-{st.name}", "kind": "reward_file", "tests": f"steps/{st.name}/tests",
                                "script": "test.sh", "threshold": threshold,
                                "timeout_s": st.verifier_timeout or verifier_timeout}
        if not st.counted:
            pred["required"] = False
        preds.append(pred)
    turns: list[dict[str, Any]] = [{"predicates": [p]} for p in preds[:-1]]
    turns.append({})
    for turn, st in zip(turns[1:], steps[1:]):
        turn["user"] = st.instruction
    task["conversation"] = {"fresh_sessions": True, "turns": turns}
    task["predicates"] = [preds[-1]]  # the state after the last step is the final state
    rep.mapped.append("steps/NAME/tests (over the task-level tests/) -> hidden/steps/NAME/tests + a reward_file "
                      "per step, checked over the state kept after its turn (the last step's as the final check)")
    per_step = [st.agent_timeout if st.agent_timeout is not None else agent_timeout for st in steps]
    if all(t is not None for t in per_step):
        task["budget"] = {**task.get("budget", {}), "wall_time_s": float(sum(per_step))}  # type: ignore[arg-type]
        rep.approximated.append("each step's agent.timeout_sec -> one wall-time budget over all the steps (their sum)")
    _oracle(src, dst, steps, task, rep)


def _oracle(src: Path, dst: Path, steps: list[Step], task: dict[str, Any], rep: TaskReport) -> None:
    if not all((st.folder / "solution" / "solve.sh").is_file() for st in steps):
        task["solution"] = None
        rep.unmapped.append("not every step has solution/solve.sh: the task has no reference solution")
        return
    for n, st in enumerate(steps, 1):
        copy_dir(st.folder / "solution", dst / "solution" / f"step-{n}")
        name = "solve.sh" if n == 1 else f"turn{n}.sh"
        (dst / "solution" / name).write_text(
            f'#!/bin/sh\n# step {n} ({st.name}): its own solve.sh, from its own folder\n'
            f'exec /bin/bash "$(dirname "$0")/step-{n}/solve.sh" "$@"\n')
    task["solution_dir"] = "/solution"
    rep.mapped.append("steps/NAME/solution/ -> solution/step-N/ (the oracle runs step N's solve.sh as turn N)")
    rep.approximated.append("each step's solution is at /solution/step-N, not at /solution itself: a solve.sh "
                            "naming /solution/FILE finds the task's whole solution folder there instead")
