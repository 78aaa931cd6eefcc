"""Every test that runs the assay CLI in a subprocess bounds it by what the step was measured to
cost (``tests.conftest.cli_timeout``: CPU seconds times a margin times the host's load), never by a
fixed figure or not at all (issue 28: a fixed 120 s for ``assay run`` and 30 s for ``assay gateway
serve`` failed at a load of 14-20 on 2 cores)."""

from __future__ import annotations

import ast
import os
import re
from pathlib import Path

import pytest

from tests.conftest import CLI_MARGIN, ROOT, cli_timeout

_WAITS = {"run", "check_output", "check_call", "call"}  # subprocess calls that wait for the process


def unmeasured_cli_calls(path: Path, root: Path = ROOT) -> list[str]:
    """``file:line`` of each ``subprocess.run``-like call in ``path`` that runs the assay CLI, and
    each bounded wait for a CLI process started apart, whose bound is not sized by ``cli_timeout``
    (a number, a parameter, or none)."""
    text = path.read_text()
    tree = ast.parse(text)
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        started = (node.func.attr in _WAITS and isinstance(node.func.value, ast.Name)
                   and node.func.value.id == "subprocess")
        # a process started with Popen and waited for later: the wait's bound, if it gives one
        waited = node.func.attr in ("wait", "communicate") and bool(node.args or node.keywords)
        if not (started or waited):
            continue
        # the command may be built before the call (`cmd = [...]`, a script, `-c` code): the call's
        # own function is what is read, the innermost one holding it
        scope = min((f for f in scopes if f.lineno <= node.lineno <= (f.end_lineno or 0)),
                    key=lambda f: (f.end_lineno or 0) - f.lineno, default=node)
        if "assay.cli.main" not in (ast.get_source_segment(text, scope) or ""):
            continue
        bound = next((k.value for k in node.keywords if k.arg == "timeout"),
                     node.args[0] if waited and node.args else None)
        sized = bound is not None and "cli_timeout" in (ast.get_source_segment(text, bound) or "")
        if isinstance(bound, ast.Name):  # a name the same function set from cli_timeout
            sized = re.search(rf"\b{bound.id}\s*=\s*cli_timeout\(", ast.get_source_segment(text, scope) or "") is not None
        if not sized:
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_every_cli_subprocess_in_the_tests_is_bounded_by_its_measured_cost() -> None:
    offenders = [where for p in sorted((ROOT / "tests").rglob("*.py")) for where in unmeasured_cli_calls(p)]
    assert offenders == [], "size these by tests.conftest.cli_timeout(CPU seconds measured): " + ", ".join(offenders)


def test_the_check_sees_a_fixed_bound_and_a_missing_one(tmp_path: Path) -> None:
    p = tmp_path / "test_probe.py"
    p.write_text("import subprocess, sys\n"
                 "subprocess.run([sys.executable, '-m', 'assay.cli.main', 'show'], timeout=120)\n"
                 "subprocess.run([sys.executable, '-m', 'assay.cli.main', 'show'])\n"
                 "subprocess.run([sys.executable, '-m', 'assay.cli.main', 'show'], timeout=cli_timeout(1))\n"
                 "subprocess.run(['ls'], timeout=5)\n"
                 "def f():\n    cmd = [sys.executable, '-m', 'assay.cli.main']\n    subprocess.run([*cmd, 'x'], timeout=9)\n"
                 "def g():\n    p = subprocess.Popen([sys.executable, '-m', 'assay.cli.main'])\n    p.wait(timeout=120)\n"
                 "    p.communicate(timeout=cli_timeout())\n    p.wait()\n")
    found = unmeasured_cli_calls(p, tmp_path)
    assert found == ["test_probe.py:2", "test_probe.py:3", "test_probe.py:8", "test_probe.py:11"]


def test_the_bound_grows_with_the_hosts_load(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "getloadavg", lambda: (1.0, 1.0, 1.0))
    idle = cli_timeout(10)
    monkeypatch.setattr(os, "getloadavg", lambda: (20.0, 20.0, 20.0))  # 10 per CPU, as when the suite timed out
    assert idle == 10 * CLI_MARGIN and cli_timeout(10) == 10 * idle
    assert cli_timeout(0.01) == 60.0  # never under a minute
