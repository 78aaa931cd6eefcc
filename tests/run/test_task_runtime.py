"""What real tasks need at run time, through a real bubblewrap sandbox: the workspace at the
task's ``workdir`` for the agent, the solution and the verifier alike (a hidden test with
absolute paths passes unmodified), scripts run by their ``#!`` line, a writable bounded
``/dev/shm`` (Python multiprocessing), per-role ``env:``, ``network:``, declared empty folders."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.records.results import EndState
from assay.run import RunOptions, start_run
from assay.sandbox.registry import get_backend
from tests.conftest import write_suite, write_task

pytestmark = pytest.mark.skipif(not get_backend("bwrap").status().usable, reason="bubblewrap is not usable here")

#: a bash-only solution: pipefail, arrays and [[ ]] fail under dash
BASH_SOLUTION = """\
#!/bin/bash
set -euo pipefail
words=(alpha beta)
[[ "$PWD" == /app ]] || { echo "cwd is $PWD" >&2; exit 3; }
printf '%s\\n' "${words[@]}" | sort > /app/out.txt
echo "$TASK_ROLE" > /app/role.txt
echo "$SHARED" > /app/shared.txt
python3 - <<'EOF'
import multiprocessing as mp
with mp.Pool(2) as pool:
    print(sum(pool.map(abs, [-1, -2, -3])), file=open("/app/pool.txt", "w"))
EOF
test -d /app/results && test -d /app/logs/deep
"""

HIDDEN_TEST = """\
import os
import subprocess
import sys
from pathlib import Path


def test_absolute_paths():
    assert Path("/app/out.txt").read_text() == "alpha\\nbeta\\n"
    assert Path("/app/pool.txt").read_text().strip() == "6"


def test_roles_env():
    assert Path("/app/role.txt").read_text().strip() == "solution"
    assert os.environ["TASK_ROLE"] == "verifier"
    assert Path("/app/shared.txt").read_text().strip() == "agent-too"


def test_rerun_code_written_by_agent():
    out = subprocess.run([sys.executable, "/app/tool.py"], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "/app"


def test_multiprocessing_in_verifier():
    import multiprocessing as mp
    with mp.Pool(2) as pool:
        assert pool.map(abs, [-4]) == [4]
"""


def app_suite(tmp_path: Path, **extra) -> Path:
    s = write_suite(tmp_path / "suite")
    task = {"category": "code", "budget": {"wall_time_s": 60}, "workdir": "/app",
            "empty_dirs": ["results", "logs/deep"],
            "env": {"agent": {"SHARED": "agent-too"}, "verifier": {"TASK_ROLE": "verifier"},
                    "solution": {"TASK_ROLE": "solution"}},
            "predicates": [{"id": "tests", "kind": "pytest"},
                           {"id": "dirs", "kind": "command", "cmd": "test -d /app/results && test -d /app/logs/deep"}],
            **extra}
    write_task(s, "app", task=task, workspace={"tool.py": "import os\nprint(os.path.dirname(__file__))\n"},
               hidden={"tests/test_app.py": HIDDEN_TEST}, solution=BASH_SOLUTION)
    return s


def run(suite: Path, agents: list[str], out: Path, **kw) -> dict:
    res = start_run(RunOptions(suite=suite, agents=agents, out=out, sandbox="bwrap", **kw)).results
    return {r.agent: r for r in res}


def test_workdir_app_bash_solution_shm_env_and_empty_dirs(tmp_path: Path) -> None:
    results = run(app_suite(tmp_path), ["oracle", "nop"], tmp_path / "run")
    oracle = results["oracle"]
    assert oracle.end_state is EndState.passed, oracle.model_dump_json(indent=1)[:3000]
    assert results["nop"].end_state is EndState.failed


def test_solution_without_shebang_runs_under_sh(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    # dash has no `[[`: under /bin/sh this line fails, so the file is written only by sh's own test
    write_task(s, "sh", task={"category": "code", "budget": {"wall_time_s": 30},
                              "predicates": [{"id": "f", "kind": "file_contains", "path": "o.txt", "text": "sh"}]},
               solution="if [[ 1 ]] 2>/dev/null; then echo bash > o.txt; else echo sh > o.txt; fi\n")
    assert Path("/bin/sh").resolve().name == "dash", "the test needs a /bin/sh without [["
    assert run(s, ["oracle"], tmp_path / "run")["oracle"].end_state is EndState.passed


def test_task_network_none_narrows_the_run(tmp_path: Path) -> None:
    """Under a run whose sandboxes reach the gateway (a relay listening on loopback inside), a
    ``network: none`` task's sandbox has nothing listening: no endpoint at all."""
    s = write_suite(tmp_path / "suite")
    listening = "awk '$4 == \"0A\"' /proc/net/tcp | wc -l > n.txt\n"
    for tid, net, want in (("closed", {"network": "none"}, "^0$"), ("open", {}, "^[1-9]")):
        write_task(s, tid, task={"category": "code", "budget": {"wall_time_s": 30}, **net,
                                 "predicates": [{"id": "f", "kind": "file_matches", "path": "n.txt", "regex": want}]},
                   solution=listening)
    results = start_run(RunOptions(suite=s, agents=["oracle"], out=tmp_path / "run", sandbox="bwrap",
                                   model="scripted")).results
    by_task = {r.task_id: r.end_state for r in results}
    assert by_task == {"closed": EndState.passed, "open": EndState.passed}


def test_setup_script_runs_by_its_shebang_at_workdir(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "setup", task={"category": "code", "budget": {"wall_time_s": 30}, "setup": "setup.sh",
                                 "workdir": "/home/user",
                                 "predicates": [{"id": "f", "kind": "command", "cmd": "grep -qx bash /home/user/made"}]},
               files={"setup.sh": "#!/bin/bash\nset -o pipefail\necho \"${BASH_VERSION:+bash}\" > /home/user/made\n"},
               solution="true\n")
    # nop does nothing: the file comes from setup alone, and the verifier reads it at the same path
    assert run(s, ["nop"], tmp_path / "run")["nop"].end_state is EndState.passed
