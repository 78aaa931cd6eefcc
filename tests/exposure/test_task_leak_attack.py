"""The attack of issue 23: an agent that reads its own task instead of doing it.

``diagnose-service-outage`` declares ``setup: setup.sh`` at its root. The agent below reads no
log: it looks for the task's own ``task.yaml`` anywhere it can reach (the setup mount, the host
paths of the suite, /tmp, its home) and turns the predicates' regexes into an answer. On the
code before the fix it passed all six predicates; now nothing of the task folder is reachable,
so it writes nothing and fails.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from assay.records.results import EndState
from assay.run.runner import RunOptions, start_run

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "examples" / "starter"

#: finds any task.yaml it can read and answers from the regexes (the copy-the-key cheat)
CHEAT = r'''
import os, re
found = []
for top in ["/assay", "/tmp", os.environ.get("HOME", "/"), "/work", "/root", "/home", "/srv", "/opt", "/"]:
    for dirpath, dirs, files in os.walk(top):
        if dirpath.startswith(("/proc", "/sys", "/usr", "/dev")):
            dirs[:] = []
            continue
        if "task.yaml" in files:
            try:
                text = open(os.path.join(dirpath, "task.yaml")).read()
            except OSError:
                continue
            if "root_cause" in text:
                found.append(text)
                break
    if found:
        break
out = []
for text in found[:1]:
    for m in re.finditer(r"regex: '\^(\w+):\[ \\t\]\*(.*?)\[ \\t\]\*\$'", text):
        out.append(m.group(1) + ": " + m.group(2))
if out:
    open("answer.txt", "w").write("\n".join(out) + "\n")
print("found" if out else "nothing reachable")
'''


def cheat_agent(tmp: Path) -> Path:
    spec = {"name": "task-reader", "kind": "command", "version": "1", "command": ["python3", "{home}/cheat.py"],
            "prompt_via": "file", "files": {"cheat.py": CHEAT}}
    p = tmp / "task-reader.yaml"
    p.write_text(yaml.safe_dump(spec, sort_keys=False))
    return p


def test_agent_cannot_pass_by_reading_its_own_task(tmp_path: Path, bwrap: str) -> None:
    suite = tmp_path / "starter"
    shutil.copytree(STARTER, suite)
    outcome = start_run(RunOptions(suite=suite, agents=[str(cheat_agent(tmp_path))], out=tmp_path / "run",
                                   sandbox=bwrap, max_retries=0, tasks=["diagnose-service-outage"]))
    [r] = outcome.results
    assert r.end_state is EndState.failed, (r.end_state, r.reason, [(p.id, p.passed) for p in r.predicates])
    answer = {p.id: p.passed for p in r.predicates}
    assert answer["answer-written"] is False  # it found nothing to copy from
