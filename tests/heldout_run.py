"""A run with one held-out task, shared by the tests of every surface that must withhold it.

Suite ``ho``: ``open1`` and ``held1`` (``held_out: true``), both passed by the ``echoer`` command
agent, which prints its prompt and writes its answer to ``out.txt``. The held-out task's prompt
carries :data:`PROMPT_MARK` and its expected value :data:`EXPECT_MARK`; they reach the trace,
the agent's output, the predicate evidence and the workspace diff of the run directory, and must
reach no report, view or export. The open task's :data:`OPEN_MARK` is the control: it shows where
details are shown, so an absent marker means withheld, not a surface that shows nothing."""

from __future__ import annotations

from pathlib import Path

import yaml

from assay.run import RunOptions, start_run
from tests.conftest import write_agent, write_suite, write_task

PROMPT_MARK = "PROMPT-MARK-5e1b"
EXPECT_MARK = "EXPECT-MARK-8c2d"
OPEN_MARK = "OPEN-MARK-3a7c"
MARKS = (PROMPT_MARK, EXPECT_MARK)

ECHOER = """
import pathlib, sys
prompt = sys.argv[1]
print("prompt was:", prompt)
answer = "ok " + ("EXPECT-MARK-8c2d" if "PROMPT-MARK" in prompt else "OPEN-MARK-3a7c")
pathlib.Path("out.txt").write_text(answer + "\\n")
print("answer:", answer)
"""


#: task ids carrying markers (:func:`held_out_run` ``ids=MARKED_IDS``): a held-out task's id must
#: reach no surface outside the run directory, the open task's id must
HELD_ID_MARK = "idmark-5c1e"
OPEN_ID_MARK = "idmark-7b2a"
MARKED_IDS = (f"open-{OPEN_ID_MARK}", f"held-{HELD_ID_MARK}")


def held_out_run(root: Path, plugins: list[object] | None = None, ids: tuple[str, str] = ("open1", "held1")) -> Path:
    """Run the suite once (host sandbox, no model) and return the run directory (``ids``: the
    open task's id and the held-out task's)."""
    s = write_suite(root / "suite", name="ho")
    open_id, held_id = ids
    write_task(s, open_id, task={"category": "code", "budget": {"wall_time_s": 60}, "predicates": [
        {"id": "out", "kind": "file_contains", "path": "out.txt", "text": OPEN_MARK}]},
        prompt="Write the open answer to out.txt.")
    write_task(s, held_id, task={"category": "code", "held_out": True, "budget": {"wall_time_s": 60}, "predicates": [
        {"id": "out", "kind": "file_contains", "path": "out.txt", "text": EXPECT_MARK}]},
        prompt=f"{PROMPT_MARK}: write the held-out answer to out.txt.")
    (root / "agent").mkdir(parents=True)
    agent = write_agent(root / "agent" / "echoer.yaml", "echoer", ECHOER)
    spec = yaml.safe_load(agent.read_text())  # the command takes the prompt as its last argument
    spec["command"] = [*spec["command"], "{prompt}"]
    agent.write_text(yaml.safe_dump(spec))
    out = root / "run"
    start_run(RunOptions(suite=s, agents=[str(agent)], out=out, sandbox="host", plugins=list(plugins or [])))
    return out
