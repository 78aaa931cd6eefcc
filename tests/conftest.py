"""Shared fixtures: small suites written into tmp dirs, so each test states its own task."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
#: what the suite reads from the user's home on purpose, kept pointing there when HOME moves
#: (caches and tool configuration only: installed agents, the compiled launcher, npm, git, pip)
_KEPT_FROM_HOME = {"ASSAY_AGENTS_DIR": ".cache/assay/agents", "XDG_CACHE_HOME": ".cache", "npm_config_cache": ".npm",
                   "NPM_CONFIG_USERCONFIG": ".npmrc", "GIT_CONFIG_GLOBAL": ".gitconfig",
                   "PIP_CONFIG_FILE": ".config/pip/pip.conf"}


def pytest_configure(config: pytest.Config) -> None:
    """The suite and every process it starts (assay runs, gateway servers, the local Ray cluster)
    get a HOME of their own: a ``~/.ray/auth_token`` left by an earlier ``ray start`` made all
    Ray tests fail authentication on a machine that was not ours."""
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        # started in the background of a script (a non-interactive shell ignores SIGINT there) the
        # assay processes the tests start would inherit it ignored, and the tests that end them with
        # Ctrl-C would wait out their timeouts; a handler is reset to the default across exec
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if os.environ.get("ASSAY_TEST_HOME"):  # already moved (a nested pytest run)
        return
    real = Path(os.environ.get("HOME") or Path.home())
    for var, rel in _KEPT_FROM_HOME.items():
        if var not in os.environ and (real / rel).exists():
            os.environ[var] = str(real / rel)
    import tempfile

    home = tempfile.mkdtemp(prefix="assay-test-home-")
    os.environ["HOME"] = os.environ["ASSAY_TEST_HOME"] = home
    config.add_cleanup(lambda: __import__("shutil").rmtree(home, ignore_errors=True))


def write_task(suite: Path, task_id: str, *, task: dict[str, Any], prompt: str = "Do the task.",
               workspace: dict[str, str] | None = None, hidden: dict[str, str] | None = None,
               verify: dict[str, str] | None = None, solution: str | None = None,
               files: dict[str, str] | None = None) -> Path:
    """Write one task folder; file maps are relative path -> content."""
    d = suite / "tasks" / task_id
    d.mkdir(parents=True, exist_ok=True)
    (d / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
    (d / "prompt.md").write_text(prompt)
    for base, mapping in (("workspace", workspace), ("hidden", hidden), ("verify", verify), ("", files)):
        for rel, content in (mapping or {}).items():
            p = d / base / rel if base else d / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_text(textwrap.dedent(content))
    (d / "workspace").mkdir(exist_ok=True)
    if solution is not None:
        (d / "solution").mkdir(exist_ok=True)
        (d / "solution" / "solve.sh").write_text(textwrap.dedent(solution))
    return d


def write_suite(root: Path, *, categories: list[dict[str, Any]] | None = None, **extra: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    data = {"name": extra.pop("name", "t"), "version": "1",
            "categories": categories or [{"id": "code", "weight": 1}], **extra}
    (root / "suite.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    (root / "tasks").mkdir(exist_ok=True)
    return root


def suite_with_wall_time(src: Path, dst: Path, wall_time_s: int) -> Path:
    """A copy of suite ``src`` at ``dst`` whose default and every task's own wall time is
    ``wall_time_s``: the product e2e tests check what a real product does, and a Node product's
    turn on a 2-core machine whose other core runs the rest of the suite can outlast an example's
    60-120 s (a wall-time cut there is the test machine's doing, not the product's)."""
    import shutil

    shutil.copytree(src, dst)
    data = yaml.safe_load((dst / "suite.yaml").read_text())
    data.setdefault("default_budget", {})["wall_time_s"] = wall_time_s
    (dst / "suite.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    for task_yaml in sorted((dst / "tasks").glob("*/task.yaml")):
        task = yaml.safe_load(task_yaml.read_text())
        if isinstance(task.get("budget"), dict) and "wall_time_s" in task["budget"]:
            task["budget"]["wall_time_s"] = wall_time_s
            task_yaml.write_text(yaml.safe_dump(task, sort_keys=False))
    return dst


def one_task_suite(src: Path, dst: Path, task: str, **task_fields: Any) -> Path:
    """A copy of suite ``src`` at ``dst`` holding only ``task`` and its category, with
    ``task_fields`` set in its task.yaml (a test edits one example task, not the shipped one)."""
    import shutil

    shutil.copytree(src, dst)
    for d in (dst / "tasks").iterdir():
        if d.name != task:
            shutil.rmtree(d)
    p = dst / "tasks" / task / "task.yaml"
    data = yaml.safe_load(p.read_text())
    suite = yaml.safe_load((dst / "suite.yaml").read_text())
    suite["categories"] = [c for c in suite["categories"] if c["id"] == data["category"]]
    (dst / "suite.yaml").write_text(yaml.safe_dump(suite))
    if task_fields:
        p.write_text(yaml.safe_dump({**data, **task_fields}, sort_keys=False))
    return dst


@pytest.fixture
def calc_suite(tmp_path: Path) -> Path:
    """One code task fixed by the oracle and checked by a hidden pytest test."""
    s = write_suite(tmp_path / "suite")
    write_task(s, "calc", task={"category": "code", "budget": {"wall_time_s": 60}, "predicates": [
        {"id": "tests", "kind": "pytest"},
        {"id": "plus", "kind": "file_contains", "path": "calc.py", "text": "a + b", "required": False, "weight": 2},
    ]}, workspace={"calc.py": "def add(a, b):\n    return a - b\n"},
        hidden={"tests/test_calc.py": "from calc import add\n\ndef test_add():\n    assert add(2, 3) == 5\n"},
        solution="sed -i 's/a - b/a + b/' calc.py\n")
    return s


def write_agent(path: Path, name: str, script: str, **extra: Any) -> Path:
    """A command agent running a Python script (inside the sandbox, in the workspace)."""
    script_path = path.parent / f"{name}.py"
    script_path.write_text(textwrap.dedent(script))
    data = {"name": name, "kind": "command", "command": [sys.executable, str(script_path)],
            "mounts": [str(path.parent)], **extra}
    path.write_text(yaml.safe_dump(data))
    return path


def assay_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT / "src")
    env.pop("COLUMNS", None)
    env["COLUMNS"] = "200"
    return env


#: CPU seconds a CLI step takes here, the default being a small run (measured: `assay --help` 0.18 s,
#: `validate examples/starter` 5.5 s, `run examples/starter --agent oracle` 3.2 s; again on 12-01 at a
#: load of 4-4.5 per CPU, CPU of the command and every process it waited for, bwrap sandbox: `--help`
#: 0.48 s, `k8s render` 0.45 s, `show`/`score`/`verify`/`export`/`compare` of that run 1.1-2.0 s,
#: `plugins` 1.9 s, `report --format html` 3.6 s, `import traces` of one 64 MiB line 2.9 s)
CLI_CPU_S = 3.5
#: `run examples/starter --agent oracle` (15 trials) measured at 7.9 s at a load of 4.3 per CPU
STARTER_RUN_CPU_S = 8.0
#: `validate examples/starter` (oracle and nop on every task) measured at 13.0 s at a load of 4.5 per CPU
STARTER_VALIDATE_CPU_S = 13.0
#: wall time allowed per CPU second on an idle host; contention multiplies it (below)
CLI_MARGIN = 30.0


def cli_timeout(cpu_s: float = CLI_CPU_S) -> float:
    """A subprocess bound sized by what the step was measured to cost, not by hope: the step's
    CPU seconds times a margin, times the host's load per CPU when it is over 1 (a load of 14-20
    on 2 cores once made a fixed 120 s too short), and never under a minute."""
    load = os.getloadavg()[0] / (os.cpu_count() or 1)
    return max(60.0, cpu_s * CLI_MARGIN * max(1.0, load))


def run_assay(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
              cpu_s: float = CLI_CPU_S) -> subprocess.CompletedProcess:
    """``assay ARGS`` as the user runs it (this checkout's source, a wide terminal), bounded."""
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          env={**assay_env(), **(env or {})}, cwd=cwd, timeout=cli_timeout(cpu_s))


def kill_runner_when(proc: subprocess.Popen, ready: Callable[[], bool], why: str, timeout_s: float = 120) -> None:
    """``kill -9`` a runner process the moment ``ready()`` holds (polled; the runner's own files
    are the only signal there is); fails with ``why`` if it never does, or if the runner ended."""
    deadline = time.monotonic() + timeout_s
    while not ready():
        assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
        assert time.monotonic() < deadline, why
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()


@contextlib.contextmanager
def server_process(cmd: list[str], *, grace_s: float = 15, **popen: Any) -> Iterator[subprocess.Popen]:
    """A server the test starts, in a process group of its own, ended on every path out of the
    ``with`` (a failure, a pytest-timeout, a server that ignores SIGINT): SIGINT to the group, then
    SIGKILL to what is left of it. Only the group this helper started is ever signalled."""
    proc = subprocess.Popen(cmd, start_new_session=True, **popen)
    try:
        yield proc
    finally:
        end_process_group(proc, grace_s)


def end_process_group(proc: subprocess.Popen, grace_s: float = 15) -> None:
    """Stop ``proc`` (a group leader this test started) and every process left in its group. The
    leader is reaped last, so its group id cannot be reused by another process meanwhile."""
    def exited() -> bool:
        try:
            return os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
        except ChildProcessError:  # already reaped (the test waited for it)
            return True

    if proc.returncode is None and not exited():
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
        deadline = time.monotonic() + grace_s
        while not exited() and time.monotonic() < deadline:
            time.sleep(0.05)
    if proc.returncode is None:  # the group id is still held by the unreaped leader: safe to signal
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):
        proc.wait()


def read_line_with(proc: subprocess.Popen, prefix: str, timeout_s: float) -> str | None:
    """The first stdout line of ``proc`` starting with ``prefix``, waiting at most ``timeout_s``
    in all (a silent server does not hang the test); None if it never came."""
    import select

    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if not ready:
            break
        line = proc.stdout.readline()  # type: ignore[union-attr]
        if not line:
            return None
        if line.startswith(prefix):
            return line
    return None


#: test groups run by one worker each under ``pytest -n N --dist loadgroup`` (scripts/test.sh): the
#: products' runs (about 1.4 cores each, with task wall times) never run two at once, nor do two
#: local Ray clusters; every other group is one file, so a module's fixtures are made once
SERIAL_GROUPS = {"products": "a file with a test marked `agents`", "ray-cluster": "tests/run/cluster/"}


def pytest_itemcollected(item: pytest.Item) -> None:
    """Every test in a ``*_e2e.py`` file is an end-to-end test: ``-m "not e2e"`` is the quick run."""
    if item.path.name.endswith("_e2e.py"):
        item.add_marker(pytest.mark.e2e)


@functools.cache
def _product_files() -> frozenset[str]:
    """Test files (relative to the checkout) holding a test that drives a real product."""
    return frozenset(p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").rglob("test_*.py")
                     if "fixtures" not in p.parts and "mark.agents" in p.read_text(errors="replace"))


def worker_group(nodeid: str) -> str:
    """The group a test runs in under ``--dist loadgroup``: :data:`SERIAL_GROUPS`, else its file."""
    file = nodeid.split("::", 1)[0]
    if file in _product_files():
        return "products"
    return "ray-cluster" if file.startswith("tests/run/cluster/") else file


@pytest.hookimpl(tryfirst=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadgroup`` as :func:`worker_group` says. pytest-xdist's own loadgroup reads a
    suffix it writes into each node id, which pytest 9.2 no longer takes (pytest-xdist issue
    1386: every test would be scheduled on its own, module fixtures made on both workers)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_group(nodeid)

    return GroupScheduling(config, log)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Where the test script installed the agents (``ASSAY_REQUIRE_AGENTS=1``), a test that skips
    because an agent "is not installed" fails instead: a product suite silently skipped is a
    false green (a test that deleted the agents' folder variable once hid every product)."""
    outcome = yield
    report = outcome.get_result()
    if os.environ.get("ASSAY_REQUIRE_AGENTS") == "1" and report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if "not installed" in reason:
            report.outcome = "failed"
            report.longrepr = f"agent missing where the test script installed every agent: {reason}"


def product_usable(name: str) -> bool:
    """Whether an agent (a product) is installed and usable here, for a skip-if-not-installed mark."""
    try:
        from assay.agents.registry import resolve_agent

        return resolve_agent(name).info().usable
    except Exception:  # noqa: BLE001
        return False
