"""The reward protocol as a predicate: the task's own test script runs in a bubblewrap verifier
sandbox with its files at /tests and a writable /logs/verifier, and the reward it writes decides
the verdict; a script that writes no reward, garbage, or a link out fails, never passes."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from assay.errors import VerifierError
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.spec import load_task
from assay.spec.digest import tree_digests
from assay.spec.predicates import RewardFile
from assay.verify import run_verifier
from assay.verify.predicates.reward import MAX_REWARD_BYTES, passed, pytest_summary, read_reward
from tests.conftest import write_suite, write_task
from tests.verify.attack_kit import need_bwrap

#: a Harbor-style test.sh: absolute /tests and /logs/verifier paths, bash, reward by the outcome
TEST_SH = """#!/bin/bash
set -o pipefail
if [ "$(cat out.txt 2>/dev/null)" = "$(cat /tests/expected.txt)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def verify(tmp_path: Path, text: str, final: dict[str, str], **pred: Any):
    need_bwrap()
    suite = write_suite(tmp_path / "suite")
    d = write_task(suite, "t", task={"category": "code", "predicates": [
        {"id": "reward", "kind": "reward_file", **pred}]},
        hidden={"tests/test.sh": text, "tests/expected.txt": "hello\n"})
    ws = tmp_path / "final"
    ws.mkdir()
    start = tree_digests(ws)
    for rel, text in final.items():
        (ws / rel).write_text(text)
    r = asyncio.run(run_verifier(load_task(d), ws, tmp_path / "verify", initial_digests=start, events=[],
                                 backend=BwrapBackend()))
    return r.predicates[0]


def test_the_scripts_reward_decides(tmp_path: Path) -> None:
    ok = verify(tmp_path / "a", TEST_SH, {"out.txt": "hello\n"})
    assert ok.passed and ok.evidence["rewards"] == {"reward": 1.0} and ok.trust == "in_process"
    bad = verify(tmp_path / "b", TEST_SH, {"out.txt": "bye\n"})
    assert not bad.passed and bad.evidence["rewards"] == {"reward": 0.0}


def test_reward_json_with_a_key_and_threshold(tmp_path: Path) -> None:
    script = "#!/bin/sh\necho '{\"correctness\": 1, \"performance\": 0.4}' > /logs/verifier/reward.json\n"
    every = verify(tmp_path / "a", script, {})
    assert not every.passed and every.evidence["reward_file"] == "reward.json"
    keyed = verify(tmp_path / "b", script, {}, key="correctness")
    assert keyed.passed
    low = verify(tmp_path / "c", script, {}, key="performance", threshold=0.5)
    assert not low.passed


@pytest.mark.parametrize("script,why", [
    ("#!/bin/sh\nexit 0\n", "wrote no"),
    ("#!/bin/sh\necho maybe > /logs/verifier/reward.txt\n", "not a number"),
    ("#!/bin/sh\nln -s /etc/hostname /logs/verifier/reward.txt\n", "could not be read"),
])
def test_no_reward_is_a_fail(tmp_path: Path, script: str, why: str) -> None:
    p = verify(tmp_path, script, {"out.txt": "hello\n"})
    assert not p.passed and why in p.evidence["error"]


def test_a_missing_script_is_the_tasks_fault(tmp_path: Path) -> None:
    with pytest.raises(VerifierError) as e:
        verify(tmp_path, TEST_SH, {}, script="nope.sh")
    assert e.value.reason == "verifier_setup"


def test_read_reward_refuses_what_a_script_could_plant(tmp_path: Path) -> None:
    (tmp_path / "reward.txt").write_text("nan")
    assert read_reward(tmp_path)[0] is None
    (tmp_path / "reward.txt").write_text("1" * (MAX_REWARD_BYTES + 1))
    assert "over" in read_reward(tmp_path)[1]
    os.unlink(tmp_path / "reward.txt")
    os.mkfifo(tmp_path / "reward.txt")  # would block a plain open()
    assert "not a regular file" in read_reward(tmp_path)[1]
    os.unlink(tmp_path / "reward.txt")
    (tmp_path / "reward.json").write_text("[1]")
    assert read_reward(tmp_path)[0] is None


def test_a_missing_key_fails() -> None:
    assert passed({"a": 1.0}, RewardFile(id="r", key="b")) == (False, "reward.json has no 'b'")
    assert passed({"a": 1.0, "b": 0.99}, RewardFile(id="r")) == (False, None)


#: a Terminal-Bench 1 custom run-tests.sh (aider-polyglot's shape): its own summary from the exit code
RUN_TESTS = """#!/bin/bash
if [ "$(cat out.txt 2>/dev/null)" = "$(cat ${TEST_DIR:-/tests}/expected.txt)" ]; then code=0; else code=1; fi
echo "=============== short test summary info ==============="
if [ $code -eq 0 ]; then echo "PASSED polyglot_test"; else echo "FAILED polyglot_test - wrong output"; fi
exit $code
"""


def test_terminal_bench_pytest_parser_reading() -> None:
    out = ("collected 3\nPASSED in the log above is not a result\n"
           "=========================== short test summary info ============================\n"
           "PASSED tests/test_outputs.py::test_a\nSKIPPED tests/test_outputs.py::test_b\n"
           "FAILED tests/test_outputs.py::test_c - assert 1 - 2 == 0\nnoise line\n== 1 failed, 2 passed ==\n")
    assert pytest_summary(out) == {"test_a": "passed", "test_b": "passed", "test_c - assert 1": "failed"}
    assert pytest_summary("1 passed in 0.01s\n") is None
    assert pytest_summary("== short test summary info ==\nXPASS t::x\nERROR t::y\n") == {"x": "failed",
                                                                                          "y": "failed"}


@pytest.mark.parametrize("final,ok", [({"out.txt": "hello\n"}, True), ({"out.txt": "bye\n"}, False), ({}, False)])
def test_a_run_tests_script_is_judged_by_the_results_it_prints(tmp_path: Path, final: dict, ok: bool) -> None:
    p = verify(tmp_path, RUN_TESTS, final, script="test.sh", reads="pytest_summary")
    assert p.passed is ok and p.trust == "in_process"
    assert p.evidence["tests"] == {"polyglot_test": "passed" if ok else "failed"}
    assert "rewards" not in p.evidence


@pytest.mark.parametrize("script,why", [
    ("#!/bin/sh\necho all good; exit 0\n", "no 'short test summary info'"),
    ("#!/bin/sh\necho '== short test summary info =='\necho '1 passed'\n", "lists no test result"),
])
def test_an_output_without_results_is_a_fail(tmp_path: Path, script: str, why: str) -> None:
    p = verify(tmp_path, script, {}, reads="pytest_summary")
    assert not p.passed and why in p.evidence["error"]


#: a script that runs the agent's code (as Harbor tests that import the solution do), then rewards
RUNS_AGENT_CODE = """#!/bin/bash
python3 -c 'import sys; sys.path.insert(0, "."); from solution import answer; sys.exit(0 if answer() == 42 else 1)'
if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
"""
#: the agent's solution: wrong, but it writes its own reward and kills the script before it writes 0
FORGES = """import os, signal
open("/logs/verifier/reward.txt", "w").write("1\\n")
os.kill(os.getppid(), signal.SIGKILL)
def answer():
    return 0
"""


def test_a_script_killed_after_the_agents_code_wrote_a_reward_fails(tmp_path: Path) -> None:
    """Harbor reads the reward whatever became of the script; a script killed by a signal never
    decided anything, so its reward file is the agent's, not the verdict."""
    honest = verify(tmp_path / "a", RUNS_AGENT_CODE, {"solution.py": "def answer():\n    return 42\n"})
    assert honest.passed, honest.evidence
    forged = verify(tmp_path / "b", RUNS_AGENT_CODE, {"solution.py": FORGES})
    assert not forged.passed, forged.evidence
    assert "signal" in forged.evidence["error"], forged.evidence


#: the agent's solution, version two: its own reward, then the file (or the folder) made read-only so
#: the script's `echo 0 >` fails, the script ending normally
LOCKS_FILE = """import os
open("/logs/verifier/reward.txt", "w").write("1\\n")
os.chmod("/logs/verifier/reward.txt", 0o444)
def answer():
    return 0
"""
LOCKS_FOLDER = """import json, os
open("/logs/verifier/reward.json", "w").write(json.dumps({"reward": 1}))
os.chmod("/logs/verifier", 0o555)
def answer():
    return 0
"""


@pytest.mark.parametrize("solution", [LOCKS_FILE, LOCKS_FOLDER])
def test_a_reward_the_agents_code_locked_against_the_script_fails(tmp_path: Path, solution: str) -> None:
    forged = verify(tmp_path, RUNS_AGENT_CODE, {"solution.py": solution})
    assert not forged.passed, forged.evidence


#: the agent's solution, version three: wrong, and it rewrites the rest of the running script in
#: place (bash reads a script as it goes), so the lines after it write a reward of 1
REWRITES_SCRIPT = """import os
with open("/tests/test.sh", "r+b") as f:
    text = f.read()
    f.seek(0)
    f.write(text.replace(b"echo 0 >", b"echo 1 >"))
def answer():
    return 0
"""
UNLINKS_SCRIPT = """import os
os.unlink("/tests/test.sh")
open("/tests/test.sh", "w").write("#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n")
def answer():
    return 0
"""


@pytest.mark.parametrize("solution", [REWRITES_SCRIPT, UNLINKS_SCRIPT])
def test_the_agents_code_cannot_rewrite_the_running_test_script(tmp_path: Path, solution: str) -> None:
    """The test folder is the verifier's to write (below); the script that decides stays as shipped."""
    forged = verify(tmp_path, RUNS_AGENT_CODE, {"solution.py": solution})
    assert not forged.passed, forged.evidence
    assert forged.evidence["rewards"] == {"reward": 0.0}, forged.evidence


#: what official Terminal-Bench 2.0 feal-differential-cryptanalysis's tests do: build a C module
#: in the tests' own folder (`cd /tests && python setup.py build_ext --inplace`)
BUILDS_IN_TESTS = """#!/bin/bash
cd /tests && mkdir -p build && echo built > build/module.txt && cd - > /dev/null
if [ "$(cat /tests/build/module.txt)" = built ] && [ "$(cat out.txt)" = "$(cat /tests/expected.txt)" ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def test_the_test_script_may_write_in_its_own_folder(tmp_path: Path) -> None:
    """Harbor uploads the tests into the container, where the script may build beside them; here
    they were mounted read-only ("Read-only file system"), so such a task's oracle failed. The
    folder is a copy of the task's tests made for this verification alone, thrown away after it."""
    ok = verify(tmp_path / "a", BUILDS_IN_TESTS, {"out.txt": "hello\n"})
    assert ok.passed, ok.evidence
    assert not verify(tmp_path / "b", BUILDS_IN_TESTS, {"out.txt": "bye\n"}).passed


def test_a_test_script_linked_out_of_its_folder_is_refused_not_bound(tmp_path: Path) -> None:
    """The script is pinned read-only by its host path; a script that is a link would make that
    another file of the host bound into the verifier's sandbox (the loader already refuses a link
    out of the suite). A link leading out of the tests' folder is the task's fault, named; one
    inside it is pinned where it leads."""
    need_bwrap()
    suite = write_suite(tmp_path / "suite")
    d = write_task(suite, "t", task={"category": "code", "predicates": [{"id": "reward", "kind": "reward_file"}]},
                   hidden={"tests/real.sh": TEST_SH, "tests/expected.txt": "hello\n",
                           "elsewhere.sh": "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"})
    (d / "hidden/tests/test.sh").symlink_to("../elsewhere.sh")
    ws = tmp_path / "final"
    ws.mkdir()
    (ws / "out.txt").write_text("hello\n")
    with pytest.raises(VerifierError) as e:
        asyncio.run(run_verifier(load_task(d), ws, tmp_path / "verify", initial_digests={}, events=[],
                                 backend=BwrapBackend()))
    assert "link" in str(e.value) and e.value.reason == "verifier_setup"
    (d / "hidden/tests/test.sh").unlink()
    (d / "hidden/tests/test.sh").symlink_to("real.sh")
    r = asyncio.run(run_verifier(load_task(d), ws, tmp_path / "verify2", initial_digests={}, events=[],
                                 backend=BwrapBackend()))
    assert r.predicates[0].passed, r.predicates[0].evidence
