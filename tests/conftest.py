"""Shared fixtures: small suites written into tmp dirs, so each test states its own task."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


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
