"""Run directories for the viewer's tests, made by the real `assay run` and `assay score`: two
runs of one agent whose second fixes a task (a flip), with hostile output and a suspect pass; a
tampered copy; a half-written folder; and the viewer itself as a real server process."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.conftest import assay_env, cli_timeout, read_line_with, server_process, write_agent, write_suite, write_task

HOSTILE = "<script>window.pwned=1</script>\x1b[2J\x1b]0;owned\x07" + "W" * 6000


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          env=assay_env(), timeout=cli_timeout())


def make_suite(root: Path) -> Path:
    s = write_suite(root, categories=[{"id": "code", "weight": 1}, {"id": "ops", "weight": 1}])
    write_task(s, "greet", task={"category": "code", "budget": {"wall_time_s": 120}, "predicates": [
        {"id": "said", "kind": "file_contains", "path": "out.txt", "text": "done"}]}, workspace={"task.txt": "greet"})
    write_task(s, "math", task={"category": "ops", "budget": {"wall_time_s": 120}, "predicates": [
        {"id": "answer", "kind": "file_contains", "path": "out.txt", "text": "42"}]}, workspace={"task.txt": "math"})
    return s


def make_agent(root: Path, *, fixed: bool) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    return write_agent(root / "alpha.yaml", "alpha", f"""
        import sys
        tid = open('task.txt').read().strip()
        print({HOSTILE!r})
        sys.stderr.write('warning: \\x1b[31mred\\x1b[0m\\n')
        open('out.txt', 'w').write('done 42' if ({fixed!r} or tid == 'greet') else 'done')
        if tid == 'greet':
            open('conftest.py', 'w').write('# steer the tests\\n')
    """)


def run_into(suite: Path, agent: Path, out: Path) -> None:
    res = cli("run", str(suite), "--agent", str(agent), "--sandbox", "host", "--out", str(out), "-q", "--seed", "3")
    assert out.joinpath("manifest.json").is_file(), res.stdout + res.stderr
    scored = cli("score", str(out))
    assert scored.returncode in (0, 1), scored.stdout + scored.stderr


@pytest.fixture(scope="module")
def runs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("view")
    suite = make_suite(base / "suite")
    runs = base / "runs"
    run_into(suite, make_agent(base / "a1", fixed=False), runs / "r1")
    run_into(suite, make_agent(base / "a2", fixed=True), runs / "r2")
    shutil.copytree(runs / "r1", runs / "tampered")
    result = next((runs / "tampered").glob("trials/greet.*/attempts/1/result.json"))
    result.write_text(result.read_text().replace('"fail"', '"pass"').replace('"pass"', '"pass" '))
    (runs / "broken").mkdir()
    (runs / "broken" / "manifest.json").write_text('{"run_id": "half')
    return runs


@pytest.fixture(scope="module")
def viewer(runs_dir: Path) -> Iterator[str]:
    with server_process([sys.executable, "-m", "assay.cli.main", "view", str(runs_dir), "--port", "0"],
                        env=assay_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as proc:
        line = read_line_with(proc, "assay view: ", 60)
        assert line, proc.stderr.read() if proc.poll() is not None else "the viewer printed no address"
        yield line.split("assay view: ", 1)[1].strip().rstrip("/")
