"""Every documented exit code, produced by the real CLI on real runs (docs/cli.md, "Exit codes"),
and output off a terminal: whole trial ids in tables, one line per error."""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from xml.etree import ElementTree as ET

from tests.conftest import assay_env, cli_timeout, run_assay, write_agent, write_suite, write_task


def assay(*args: str) -> subprocess.CompletedProcess:
    return run_assay(*args)


def test_usage_errors_exit_2_without_a_traceback(calc_suite: Path, tmp_path: Path) -> None:
    for args in (["run", "--bogus"], ["score", str(tmp_path), "--max-infra-rate", "2"], ["nonsense"],
                 ["compare", str(tmp_path)]):
        r = assay(*args)
        assert r.returncode == 2, (args, r.stderr)
        assert "Traceback" not in r.stderr, args


def test_a_category_without_tasks_is_a_suite_error(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s", categories=[{"id": "code", "weight": 1}, {"id": "empty", "weight": 3}])
    write_task(s, "one", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "x"}]})
    out = tmp_path / "run"
    r = assay("run", str(s), "--agent", "nop", "--sandbox", "host", "--out", str(out))
    assert r.returncode == 2
    assert "categories.1" in r.stderr and "'empty' has no task" in r.stderr
    assert not out.exists()  # nothing written


def test_run_exit_codes_for_infra_errors_and_nothing_scored(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "badsetup", task={"category": "code", "setup": "setup.sh", "budget": {"wall_time_s": 60},
                                    "predicates": [{"id": "f", "kind": "file_exists", "path": "a.py"}]},
               workspace={"a.py": "x = 1\n"}, files={"setup.sh": "exit 3\n"})
    junit = tmp_path / "junit.xml"
    r = assay("run", str(s), "--agent", "nop", "--sandbox", "host", "--out", str(tmp_path / "r1"), "-q",
              "--max-retries", "0", "--max-infra-rate", "0", "--junit", str(junit), "--summary-md", str(tmp_path / "s.md"))
    assert r.returncode == 4, r.stderr
    assert "above --max-infra-rate 0" in r.stderr and "run directory:" in r.stdout
    assert [e.tag for e in ET.parse(junit).getroot().iter("error")] == ["error"]
    assert "**Security gate: PASSED**" in (tmp_path / "s.md").read_text()
    tolerant = assay("run", str(s), "--agent", "nop", "--sandbox", "host", "--out", str(tmp_path / "r2"), "-q",
                     "--max-retries", "0", "--max-infra-rate", "1")
    assert tolerant.returncode == 0, tolerant.stderr
    # an agent that offers no tool declares every task unsupported: nothing is scored, never a pass
    agent = write_agent(tmp_path / "none.yaml", "none", "print('unreachable')\n", tools=[])
    none = assay("run", str(s), "--agent", str(agent), "--sandbox", "host", "--out", str(tmp_path / "r3"), "-q")
    assert none.returncode == 5, none.stderr
    assert "zero scored trials" in none.stderr and "n/a (0/0)" in none.stdout


def test_interrupted_run_exits_130_and_names_the_run_to_resume(tmp_path: Path) -> None:
    ready, release = tmp_path / "ready.fifo", tmp_path / "release.fifo"
    os.mkfifo(ready)
    os.mkfifo(release)
    agent = write_agent(tmp_path / "waiter.yaml", "waiter", textwrap.dedent(f"""
        with open({str(ready)!r}, "w") as f:
            f.write("started\\n")
        with open({str(release)!r}) as f:  # blocks until the test opens and closes it
            f.read()
    """))
    s = write_suite(tmp_path / "s")
    write_task(s, "t", task={"category": "code", "budget": {"wall_time_s": 120},
                             "predicates": [{"id": "f", "kind": "file_exists", "path": "x"}]})
    out = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", str(agent),
                             "--sandbox", "host", "--out", str(out), "-q"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=assay_env())
    try:
        fd = os.open(ready, os.O_RDONLY | os.O_NONBLOCK)
        try:
            readable, _, _ = select.select([fd], [], [], 120)
            assert readable, "the agent never started"
            assert os.read(fd, 64).startswith(b"started")  # the attempt is in flight now
        finally:
            os.close(fd)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=cli_timeout())
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
        wfd = os.open(release, os.O_WRONLY | os.O_NONBLOCK) if _has_reader(release) else None
        if wfd is not None:
            os.close(wfd)  # lets a still-waiting agent script end
    assert proc.returncode == 130, stderr
    assert f"resume with `assay run --resume {out}`" in stderr
    assert (out / "manifest.json").exists()


def _has_reader(fifo: Path) -> bool:
    try:
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
        return True
    except OSError:  # ENXIO: nobody has it open for reading
        return False


def test_off_a_terminal_ids_are_whole_and_errors_one_line(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    long_id = "a-rather-long-task-identifier-that-would-not-fit-eighty-columns"
    write_task(s, long_id, task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "x"}]})
    out = tmp_path / "run"
    env = {k: v for k, v in assay_env().items() if k != "COLUMNS"}  # as a CI log sees it: no terminal, no width
    r = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", "nop", "--sandbox", "host",
                        "--out", str(out), "-q"], capture_output=True, text=True, env=env, timeout=cli_timeout())
    assert r.returncode == 0, r.stderr
    shown = subprocess.run([sys.executable, "-m", "assay.cli.main", "show", str(out)], capture_output=True, text=True,
                           env=env, timeout=cli_timeout())
    assert f"{long_id}.base.nop.r1" in shown.stdout and "…" not in shown.stdout
    assert "strict (scored)" in shown.stdout and "infra_error" in shown.stdout  # column names whole
    missing = subprocess.run([sys.executable, "-m", "assay.cli.main", "show", str(out), "x" * 150],
                             capture_output=True, text=True, env=env, timeout=cli_timeout())
    assert missing.returncode == 2
    assert len(missing.stderr.strip().splitlines()) == 1 and "x" * 150 in missing.stderr


def test_a_scripted_run_is_flagged_where_its_scores_are_shown(calc_suite: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    r = assay("run", str(calc_suite), "--agent", "oracle", "--sandbox", "host", "--model", "scripted", "--out", str(out),
              "-q")
    assert r.returncode == 0, r.stderr
    assert "WARNING scripted model: this measures the harness" in r.stdout
    assert "WARNING nominal prices" in r.stdout
    scored = assay("score", str(out))
    assert "measured: scripted model assay-scripted; sandbox host" in scored.stdout
    cmp = assay("compare", str(out), str(out))
    assert cmp.returncode == 0 and "note: candidate: scripted model" in cmp.stdout
