"""The ``assay`` process keeps its garbage collector off while it imports its world, then freezes
what the imports made and turns it back on before any work: a long run still collects its own
cycles, but never walks the objects of 700 imported modules again (at start-up and at exit
that walking was about a sixth of a one-trial run). In-process calls (``main(argv)``, the tests)
leave the collector as they found it."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import cli_timeout, write_suite, write_task

#: runs ``assay run`` as the console script does (``main()`` with no argv) and records the
#: collector's state when the run starts, after the command's imports
PROBE = """
import gc, json, sys
import assay.run.runner as runner
seen = {}
real = runner.start_run
def start_run(*a, **k):
    seen.update(enabled=gc.isenabled(), frozen=gc.get_freeze_count())
    return real(*a, **k)
runner.start_run = start_run
out = sys.argv[1]
sys.argv = ["assay", *sys.argv[2:]]
import assay.cli.main as m
try:
    m.main()
finally:
    open(out, "w").write(json.dumps(seen))
"""


def _suite(tmp_path: Path) -> Path:
    s = write_suite(tmp_path / "suite")
    write_task(s, "f", task={"category": "code", "predicates": [
        {"id": "done", "kind": "file_contains", "path": "out.txt", "text": "done"}]}, workspace={"README": "-\n"})
    return s


def test_a_run_starts_with_the_collector_on_and_the_imports_frozen(tmp_path: Path) -> None:
    seen = tmp_path / "seen.json"
    proc = subprocess.run([sys.executable, "-c", PROBE, str(seen), "run", str(_suite(tmp_path)), "-a", "nop",
                           "--quiet", "-o", str(tmp_path / "run")], capture_output=True, text=True,
                          timeout=cli_timeout())
    assert proc.returncode == 0, proc.stderr
    state = json.loads(seen.read_text())
    assert state["enabled"] is True  # a long run must still collect its cycles
    # the command's modules were frozen before the run: the run's collections never walk them
    assert state["frozen"] > 20_000, state  # 71,304 tracked containers here
    assert (tmp_path / "run" / "manifest.json").is_file()


def test_a_usage_error_still_exits_cleanly_with_the_collector_off(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(tmp_path / "missing"), "-a", "nop"],
                          capture_output=True, text=True, timeout=cli_timeout())
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr


def test_in_process_calls_leave_the_collector_as_they_found_it(tmp_path: Path) -> None:
    from assay.cli.main import main

    frozen = gc.get_freeze_count()
    assert gc.isenabled()
    code = main(["run", str(_suite(tmp_path)), "-a", "nop", "--quiet", "-o", str(tmp_path / "run")])
    assert code == 0
    assert gc.isenabled()
    assert gc.get_freeze_count() == frozen
