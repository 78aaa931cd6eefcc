"""Harbor's stock verifier bootstrap as real tasks spell it: every spelling whose only fetches are
apt's curl (and its CA bundle), uv's installer and uvx's pytest is run offline; anything that
fetches more runs as shipped (and the report says it needs the network)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from assay.importers import import_suite
from assay.importers.harbor_offline import offline_script

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"

TAIL = """
curl -LsSf https://astral.sh/uv/0.9.7/install.sh | sh

source $HOME/.local/bin/env

uvx \\
  --with pytest==8.4.1 \\
  --with pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA

status=$?
if [ "$status" -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi
exit "$status"
"""

#: the apt lines of real tasks' test.sh (a newer Harbor template installs the CA bundle too, one
#: package a line, with DEBIAN_FRONTEND set)
STOCK = [
    "apt-get update\napt-get install -y curl\n",
    "set -o pipefail\n\nmkdir -p /logs/verifier\n\napt-get update\nDEBIAN_FRONTEND=noninteractive apt-get install -y \\\n"
    "  --no-install-recommends \\\n  curl \\\n  ca-certificates\n",
    "apt-get update -qq\napt-get install -qq -y --no-install-recommends ca-certificates curl\n",
    "export DEBIAN_FRONTEND=noninteractive\napt-get -y update\napt-get -y install curl\n",
]


@pytest.mark.parametrize("apt", STOCK)
def test_every_stock_spelling_runs_offline(apt: str) -> None:
    out = offline_script("#!/bin/bash\n" + apt + TAIL)
    assert out is not None
    assert "python3 -I -m pytest -p no:cacheprovider /tests/test_outputs.py -rA" in re.sub(" +", " ", out)
    for gone in ("apt-get", "curl", "uvx", "astral.sh", "--ctrf"):
        assert gone not in out, (gone, out)
    assert 'echo 1 > /logs/verifier/reward.txt' in out and 'exit "$status"' in out


@pytest.mark.parametrize("apt", [
    "apt-get update\napt-get install -y curl jq\n",  # jq: the tests need more than the bootstrap
    "apt-get update\nDEBIAN_FRONTEND=noninteractive apt-get install -y \\\n  curl \\\n  file\n",
    "apt-get update\napt-get install -y curl && pip install requests\n",
    "apt-get update\napt-get install -y curl\nwget -q https://example.org/data.bin\n",
])
def test_a_script_that_fetches_anything_else_is_not_rewritten(apt: str) -> None:
    assert offline_script("#!/bin/bash\n" + apt + TAIL) is None


def test_the_newer_template_imports_as_approximated_not_as_needing_the_network(tmp_path: Path) -> None:
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "newer-template")
    script = src / "newer-template/tests/test.sh"
    script.write_text("#!/bin/bash\n" + STOCK[1] + TAIL.replace("test_outputs.py", "test_state.py"))
    [r] = import_suite("harbor", src, tmp_path / "out").tasks
    assert r.imported and not r.unmapped, r.unmapped
    assert any("uv bootstrap" in a for a in r.approximated)
    offline = (tmp_path / "out/tasks/newer-template/hidden/tests/test.sh").read_text()
    assert "python3 -I -m pytest" in offline and "apt-get" not in offline


def test_a_multi_step_task_takes_its_prompt_from_its_first_step(tmp_path: Path) -> None:
    """Harbor's multi-step tasks keep each step's instruction under steps/NAME/ and none at the
    top: the prompt is the first step's (once refused for a missing top-level instruction.md, then
    for its steps; they import now, tests/environments/test_harbor_steps.py). The step has no tests
    of its own: the task-level tests/test.sh is its fallback, as in Harbor."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "milestones")
    (src / "milestones/instruction.md").unlink()
    (src / "milestones/steps/milestone_1").mkdir(parents=True)
    (src / "milestones/steps/milestone_1/instruction.md").write_text("do the first part\n")
    with open(src / "milestones/task.toml", "a") as f:
        f.write('\n[[steps]]\nname = "milestone_1"\n')
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "good")  # a suite needs one task imported
    r = {t.id: t for t in import_suite("harbor", src, tmp_path / "out").tasks}["milestones"]
    assert r.imported, r.refused
    assert (tmp_path / "out/tasks/milestones/prompt.md").read_text() == "do the first part\n"
    assert (tmp_path / "out/tasks/milestones/hidden/steps/milestone_1/tests/test.sh").is_file()


@pytest.mark.parametrize("line", [
    "if uv run --with pytest pytest /tests/test_resolver.py -v; then",  # a fetched real task's
    "uv sync --frozen", "uv tool install ruff", "npm install --no-audit", "npm ci", "npx jest",
    "yarn install", "pnpm install", "git clone https://example.org/repo.git", "go mod download",
    "go install example.org/tool@latest", "cargo fetch", "gem install rspec", "python3 -m pip install requests",
])
def test_every_test_time_fetch_is_named(tmp_path: Path, line: str) -> None:
    """What the report calls "fetches from the network at test time" (so the audit can label the
    task `needs` network) includes package managers beyond pip and apt."""
    from assay.importers.common import network_lines

    script = tmp_path / "test.sh"
    script.write_text(f"#!/bin/bash\nmkdir -p /logs/verifier\n{line}\necho 1 > /logs/verifier/reward.txt\n")
    assert network_lines(script) == [f"test.sh:3: {line}"]


@pytest.mark.parametrize("line", ["python3 -m pytest /tests -rA", "echo uv is fast", "npm_config=1 true",
                                  "cat /tests/gitclone.txt", "go_dir=/tmp"])
def test_a_line_that_fetches_nothing_is_not_named(tmp_path: Path, line: str) -> None:
    from assay.importers.common import network_lines

    script = tmp_path / "test.sh"
    script.write_text(f"#!/bin/bash\n{line}\n")
    assert network_lines(script) == []


def test_the_import_report_names_what_the_dockerfile_does_not_apply(tmp_path: Path) -> None:
    """The report says what the image's plan says: a `CMD` not run is approximated in both."""
    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "with-cmd")
    with open(src / "with-cmd/environment/Dockerfile", "a") as f:
        f.write('\nCMD ["bash"]\n')
    [r] = import_suite("harbor", src, tmp_path / "out").tasks
    assert r.imported and any(": CMD not run" in a for a in r.approximated), r.approximated


#: a fetched task's verifier (Dhruvpatel2684/metrics-aggregation-repair): uv installed in the image
#: at build time, `uv run --with pytest` at test time, inside an `if`
UV_RUN = """#!/bin/bash
set -e
mkdir -p /logs/verifier

cd /app/runtime
python3 run_resolver.py

if uv run --with pytest pytest /tests/test_resolver.py -v; then
    echo "1" > /logs/verifier/reward.txt
else
    echo "0" > /logs/verifier/reward.txt
fi
"""


def test_uv_run_with_pytest_anywhere_in_a_line_runs_offline() -> None:
    out = offline_script(UV_RUN)
    assert out is not None
    assert "if python3 -I -m pytest -p no:cacheprovider /tests/test_resolver.py -v; then" in out
    assert "uv run" not in out and 'echo "1" > /logs/verifier/reward.txt' in out
    assert offline_script(UV_RUN.replace("--with pytest pytest", "--with requests pytest")) is None  # more than pytest


def test_uv_run_over_a_uv_project_is_left_as_shipped(tmp_path: Path) -> None:
    """`uv run` inside a project first syncs the project's dependencies, which needs the network:
    when the task's environment ships a pyproject.toml or uv.lock, the script runs as shipped."""
    assert offline_script(UV_RUN, uv_project=True) is None
    src = tmp_path / "src"
    for name, project in (("plain", False), ("project", True)):
        shutil.copytree(FIXTURES / "harbor/simple-task", src / name)
        (src / name / "tests/test.sh").write_text(UV_RUN.replace("python3 run_resolver.py\n", ""))
        if project:
            (src / name / "environment/pyproject.toml").write_text("[project]\nname = 'x'\nversion = '0'\n")
    report = {t.id: t for t in import_suite("harbor", src, tmp_path / "out").tasks}
    assert any("uv bootstrap" in a for a in report["plain"].approximated)
    assert any("fetches from the network" in u for u in report["project"].unmapped)
    assert "python3 -I -m pytest" in (tmp_path / "out/tasks/plain/hidden/tests/test.sh").read_text()


#: the official Terminal-Bench 2.0 tasks' test.sh (`terminal-bench-2/cancel-async-tasks`, Apache-2.0):
#: uvx's short `-w` for `--with` and `-p 3.13` for the Python it runs pytest with
TB2_0 = """#!/bin/bash

# Install curl
apt-get update
apt-get install -y curl

# Install uv
curl -LsSf https://astral.sh/uv/0.9.5/install.sh | sh
source $HOME/.local/bin/env

cp /tests/test.py /app/test.py

uvx \\
  -p 3.13 \\
  -w pytest==8.4.1 \\
  -w pytest-json-ctrf==0.3.5 \\
  pytest --ctrf /logs/verifier/ctrf.json /tests/test_outputs.py -rA


if [ $? -eq 0 ]; then
  echo 1 > /logs/verifier/reward.txt
else
  echo 0 > /logs/verifier/reward.txt
fi
"""


def test_terminal_bench_2_0s_short_flags_run_offline() -> None:
    """Every official Terminal-Bench 2.0 task fetched (6 of 6) spells it `uvx -p 3.13 -w pytest==…`:
    read as a fetch of something else, their scripts ran as shipped and every task was labelled
    `needs` (network). `-w`/`--with=` name the same packages; `-p`/`--python` the Python, which is
    the image's here (its version is said with the FROM's mapping)."""
    out = offline_script(TB2_0)
    assert out is not None
    assert "python3 -I -m pytest -p no:cacheprovider /tests/test_outputs.py -rA" in re.sub(" +", " ", out), out
    assert "cp /tests/test.py /app/test.py" in out
    code = "\n".join(line.split("#", 1)[0] for line in out.splitlines())  # its comments are kept as written
    for gone in ("apt-get", "curl", "uvx", "-w pytest", "-p 3.13", "--ctrf"):
        assert gone not in code, (gone, out)
    for spelled in ("uvx --python 3.13 --with=pytest==8.4.1 pytest /t.py", "uvx --python=3.12 -w pytest pytest /t.py"):
        assert offline_script(f"apt-get update\napt-get install -y curl\n{spelled}\n") is not None, spelled
    for other in ("uvx -w requests pytest /t.py", "uvx -p 3.13 -w pytest --from x pytest /t.py"):
        assert offline_script(f"apt-get update\napt-get install -y curl\n{other}\n") is None, other


def test_a_reference_solution_that_fetches_says_so(tmp_path: Path) -> None:
    """The official Terminal-Bench 2.0 task log-summary-date-ranges's solve.sh starts with `apt-get
    update && apt-get install -y grep coreutils` under `set -e`. Here the agent's sandbox has no
    network (and no root), so the oracle stops there, and the audit called the task unsolvable as
    shipped. The report now names the fetch, so an oracle that fails is labelled `needs` network."""
    from assay.run.audit import needs_of

    src = tmp_path / "src"
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "fetching-solution")
    shutil.copytree(FIXTURES / "harbor/simple-task", src / "quiet-solution")
    (src / "fetching-solution/solution/solve.sh").write_text(
        "#!/bin/bash\nset -euo pipefail\napt-get update && apt-get install -y grep coreutils\necho done > /app/out\n")
    report = import_suite("harbor", src, tmp_path / "out")
    by_id = {r.id: r for r in report.tasks}
    fetching = [u for u in by_id["fetching-solution"].unmapped if "solution/solve.sh" in u]
    assert fetching and "solve.sh:3: apt-get update && apt-get install -y grep coreutils" in fetching[0], \
        by_id["fetching-solution"].unmapped
    assert not [u for u in by_id["quiet-solution"].unmapped if "solution/solve.sh" in u]
    assert any("solve.sh" in n for n in needs_of(tmp_path / "out")["fetching-solution"])
