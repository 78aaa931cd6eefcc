"""`assay lint` over what a task's own image puts within the agent's reach that its hidden tests
trust: a grader the image copies into the workspace and the tests run, an expected value the
image bakes outside the workspace and the tests read. The shapes are those of a peer QC tool's
labelled fixtures and of one real multimedia task; each near miss next to its finding must stay
quiet, since a lint error stops `assay run`."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.spec.load import load_suite
from assay.verify.lint import lint_suite
from tests.conftest import write_suite, write_task

TEST_SH = """#!/bin/bash
mkdir -p /logs/verifier
{run}
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""


def _task(root: Path, dockerfile: str, *, run: str = "python3 -m pytest /tests/test_outputs.py -q",
          test_py: str = "def test_ok():\n    assert open('/app/out.txt').read() == 'x'\n",
          context: dict[str, str] | None = None, files: dict[str, str] | None = None, solution: str | None = None,
          **task: object) -> Path:
    s = write_suite(root)
    d = write_task(s, "t", task={"category": "code", "workdir": "/app",
                                 "environment": {"dockerfile": "environment/Dockerfile", "context": "environment"},
                                 "predicates": [{"id": "reward", "kind": "reward_file"}], **task},
                   hidden={"tests/test.sh": TEST_SH.format(run=run), "tests/test_outputs.py": test_py,
                           **(files or {})}, solution=solution)
    (d / "environment").mkdir()
    (d / "environment" / "Dockerfile").write_text(dockerfile)
    for name, text in (context or {}).items():
        (d / "environment" / name).parent.mkdir(parents=True, exist_ok=True)
        (d / "environment" / name).write_text(text)
    return s


def _found(suite: Path) -> list[tuple[str, str]]:
    return sorted((f.rule, f.detail) for f in lint_suite(load_suite(suite)) if f.error)


BASE = "FROM ubuntu:24.04\nRUN apt-get update && apt-get install -y python3\n"


def test_a_grader_the_image_copies_into_the_workspace_and_the_tests_run_is_found(tmp_path: Path) -> None:
    s = _task(tmp_path / "s", BASE + "COPY grade.py /app/grade.py\nWORKDIR /app\n",
              run="python3 /app/grade.py | grep -q OK", context={"grade.py": "print('OK')\n"})
    [(rule, detail)] = _found(s)
    assert rule == "verifier_program_writable" and "/app/grade.py" in detail and "line 3" in detail


def test_a_grader_the_image_keeps_outside_the_workspace_is_verifier_code_the_agent_reads(tmp_path: Path) -> None:
    s = _task(tmp_path / "s", BASE + "COPY grade.py /opt/grade.py\nWORKDIR /app\n", run="python3 /opt/grade.py",
              context={"grade.py": "print('OK')\n"})
    [(rule, detail)] = _found(s)
    assert rule == "hidden_readable" and "run /opt/grade.py" in detail


def test_a_grader_copied_by_folder_into_the_workdir_is_found(tmp_path: Path) -> None:
    s = _task(tmp_path / "s", BASE + "WORKDIR /app\nCOPY tools/ ./tools/\n", run="bash /app/tools/grader.sh",
              context={"tools/grader.sh": "exit 0\n"})
    assert [r for r, _ in _found(s)] == ["verifier_program_writable"]


@pytest.mark.parametrize("bake", ["RUN echo 2 > /opt/answer.txt", "RUN printf '1\\n3\\n' | tee /srv/expected.csv",
                                  "COPY expected.json /opt/truth/expected.json"])
def test_an_expected_value_the_image_bakes_outside_the_workspace_is_found(tmp_path: Path, bake: str) -> None:
    path = bake.split()[-1]
    s = _task(tmp_path / "s", BASE + bake + "\nWORKDIR /app\n", context={"expected.json": "{}\n"},
              test_py=f"def test_ok():\n    assert open('/app/out.txt').read() == open('{path}').read()\n")
    [(rule, detail)] = _found(s)
    assert rule == "hidden_readable" and path in detail


@pytest.mark.parametrize(("dockerfile", "run", "test_py"), [
    # the truth beside the tests (a verifier-side mount): never in the agent's image
    (BASE + "WORKDIR /app\n", "python3 -m pytest /tests/test_outputs.py",
     "def test_ok():\n    assert open('/app/out.txt').read() == open('/tests/.truth/x.txt').read()\n"),
    # a decoy grader in the image; the tests run their own copy
    (BASE + "COPY grade.py /opt/grade.py\nWORKDIR /app\n", "python3 /tests/.truth/grade.py", "def test_ok():\n    pass\n"),
    # test inputs kept from the agent: read taken from others, and the agent is never the image's root
    (BASE + "RUN mkdir -p /opt/.clips && cp /etc/hostname /opt/.clips/a && chmod -R o-rwx /opt/.clips\nWORKDIR /app\n",
     "cp /opt/.clips/a /app/a && python3 -m pytest /tests/test_outputs.py", "def test_ok():\n    pass\n"),
    # an interpreter the image installs (named, not written by a redirect or a copy)
    (BASE + "RUN python3 -m venv /opt/venv && /opt/venv/bin/pip install pytest\nWORKDIR /app\n",
     "/opt/venv/bin/python -m pytest /tests/test_outputs.py", "def test_ok():\n    pass\n"),
    # input data the image writes into the workspace: the agent's to read, not a grader
    (BASE + "RUN mkdir -p /app/data && printf '1\\n' > /app/data/in.txt\nWORKDIR /app\n",
     "python3 -m pytest /tests/test_outputs.py",
     "def test_ok():\n    assert open('/app/out.txt').read() == open('/app/data/in.txt').read()\n"),
    # what the tests read from the image is most often the task's input (a real collection: 250 of 3,554)
    (BASE + "COPY customers.csv /data/customers.csv\nWORKDIR /app\n", "python3 -m pytest /tests/test_outputs.py",
     "def test_ok():\n    assert len(open('/data/customers.csv').read()) > 0\n"),
    # and what they run from the workspace is most often the agent's own work (266 of 3,554)
    (BASE + "COPY loss.py /app/loss.py\nWORKDIR /app\n", "python3 /app/loss.py", "def test_ok():\n    pass\n"),
    # an answer file the instruction itself hands the agent is the task's design, not a leak
    (BASE + "COPY expected.json /data/expected.json\nWORKDIR /app\n", "python3 -m pytest /tests/test_outputs.py",
     "def test_ok():\n    assert open('/data/expected.json').read()\n"),
])
def test_near_misses_are_quiet(tmp_path: Path, dockerfile: str, run: str, test_py: str) -> None:
    s = _task(tmp_path / "s", dockerfile, run=run, test_py=test_py,
              context={"grade.py": "print('OK')\n", "customers.csv": "id\n1\n", "loss.py": "pass\n",
                       "expected.json": "{}\n"})
    if "expected.json /data" in dockerfile:  # the instruction names it
        (s / "tasks" / "t" / "prompt.md").write_text("Make /app/out.json equal /data/expected.json.\n")
    assert _found(s) == []


def test_a_finding_the_task_declares_intended_is_no_error(tmp_path: Path) -> None:
    s = _task(tmp_path / "s", BASE + "COPY grade.py /app/grade.py\nWORKDIR /app\n", run="python3 /app/grade.py",
              context={"grade.py": "print('OK')\n"},
              exposure_intended={"verifier_program_writable": "the tests recompute the total on their own too"})
    [f] = lint_suite(load_suite(s))
    assert f.rule == "verifier_program_writable" and not f.error


def test_an_imported_harbor_task_with_a_baked_answer_is_refused_by_run(tmp_path: Path) -> None:
    """Through the importer and `assay run`'s own lint: the run is refused (exit 2) naming the path."""
    from tests.conftest import run_assay

    src = tmp_path / "src" / "baked"
    (src / "environment").mkdir(parents=True)
    (src / "tests").mkdir()
    (src / "solution").mkdir()
    (src / "task.toml").write_text('version = "1.0"\n[metadata]\ncategory = "data"\n[agent]\ntimeout_sec = 60.0\n'
                                   '[verifier]\ntimeout_sec = 60.0\n')
    (src / "instruction.md").write_text("Count the rows of /app/data.csv into /app/out.txt.\n")
    (src / "environment" / "Dockerfile").write_text(BASE + "RUN echo 3 > /opt/answer_truth.txt\nWORKDIR /app\n")
    (src / "tests" / "test.sh").write_text(TEST_SH.format(run="python3 -m pytest /tests/test_outputs.py -q"))
    (src / "tests" / "test_outputs.py").write_text(
        "def test_count():\n    assert open('/app/out.txt').read().strip() == open('/opt/answer_truth.txt').read().strip()\n")
    (src / "solution" / "solve.sh").write_text("#!/bin/bash\necho 3 > /app/out.txt\n")
    out = run_assay("import", "harbor", str(tmp_path / "src"), "-o", str(tmp_path / "suite"))
    assert out.returncode == 0, out.stderr
    lint = run_assay("lint", str(tmp_path / "suite"))
    assert lint.returncode != 0 and "/opt/answer_truth.txt" in lint.stdout + lint.stderr
    run = run_assay("run", str(tmp_path / "suite"), "-a", "nop", "--out", str(tmp_path / "run"))
    assert run.returncode == 2 and "hidden_readable" in run.stderr + run.stdout and not (tmp_path / "run").exists()
    # the workspace is where the image's WORKDIR put it (the imported task names no workdir of its own)
    assert "workdir" not in yaml.safe_load((tmp_path / "suite" / "tasks" / "baked" / "task.yaml").read_text())


def test_a_solution_the_image_copies_into_the_workspace_is_found(tmp_path: Path) -> None:
    """A real Terminal-Bench 1 adaptation's shape (aider_polyglot, all 225 tasks): the oracle's
    encrypted payload sits in the workspace the image copies in, its password a default."""
    s = _task(tmp_path / "s", BASE + "WORKDIR /app\nCOPY workspace/ ./\n",
              context={"workspace/main.cpp": "int main() {}\n", "workspace/.oracle/solution.enc": "Salted__x\n"},
              solution="#!/bin/bash\nopenssl enc -d -in /app/.oracle/solution.enc -pass pass:default | tar -x\n")
    [(rule, detail)] = _found(s)
    assert rule == "hidden_readable" and "/app/.oracle/solution.enc" in detail


def test_a_stub_the_instruction_names_is_no_answer(tmp_path: Path) -> None:
    s = _task(tmp_path / "s", BASE + "WORKDIR /app\nCOPY workspace/ ./\n",
              context={"workspace/solution.py": "def solve():\n    raise NotImplementedError\n"},
              solution="#!/bin/bash\nprintf 'def solve():\\n    return 1\\n' > /app/solution.py\n")
    (s / "tasks" / "t" / "prompt.md").write_text("Implement solve() in /app/solution.py.\n")
    assert _found(s) == []
