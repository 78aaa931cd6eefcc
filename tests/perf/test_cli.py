"""``assay perf`` and ``assay compare`` on performance folders: bad input is one line and exit 2;
gates exit 1 when one trips, 0 when none does, 5 when nothing was compared."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import cli_timeout
from tests.perf.docs import document


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assay.cli.main", *args], capture_output=True, text=True,
                          timeout=cli_timeout())


def test_a_bad_perf_suite_is_one_line_naming_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "perf.yaml"
    bad.write_text("name: x\nscenarios:\n  - {id: cold, kind: warm_start}\n")
    r = cli("perf", str(bad), "--agent", "nop", "-o", str(tmp_path / "out"))
    assert r.returncode == 2, r.stderr
    assert "perf.yaml" in r.stderr and "kind" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "out").exists()


def test_an_unknown_scenario_is_refused_before_anything_runs(tmp_path: Path) -> None:
    r = cli("perf", "examples/performance", "--agent", "nop", "--scenario", "warp", "-o", str(tmp_path / "out"))
    assert r.returncode == 2 and "warp" in r.stderr and "cold" in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def _folder(tmp_path: Path, name: str, **kw: object) -> Path:
    d = tmp_path / name
    d.mkdir()
    (d / "performance.json").write_text(document({"pi": kw}).model_dump_json())
    return d


def test_compare_gates_on_performance_folders(tmp_path: Path) -> None:
    base = _folder(tmp_path, "base", open_per_turn=0.001)
    cand = _folder(tmp_path, "cand", open_per_turn=0.003, leak=3e6)
    tripped = cli("compare", str(base), str(cand), "--fail-if", "resume_p95_1000_turns>2s")
    assert tripped.returncode == 1, tripped.stdout + tripped.stderr
    assert "TRIPPED" in tripped.stdout
    ok = cli("compare", str(base), str(cand), "--fail-if", "resume_p95_1000_turns>10s",
             "--fail-if", "rss_growth_per_turn>4MB")
    assert ok.returncode == 0, ok.stdout + ok.stderr
    nothing = cli("compare", str(base), str(cand))
    assert nothing.returncode == 5, nothing.stdout + nothing.stderr
    unsupported = cli("compare", str(base), str(cand), "--fail-if", "store.open_s@100.p95>1s")
    assert unsupported.returncode == 1 and "unsupported" in unsupported.stdout
    bad = cli("compare", str(base), str(cand), "--fail-if", "resume_p95_1000_turns>2parsecs")
    assert bad.returncode == 2 and "fix:" in bad.stderr


def test_a_performance_folder_against_a_run_directory_is_refused(tmp_path: Path) -> None:
    perf = _folder(tmp_path, "perf")
    run = tmp_path / "run"
    run.mkdir()
    r = cli("compare", str(perf), str(run), "--fail-if", "resume_p95_10_turns>1s")
    assert r.returncode == 2 and "performance folder" in r.stderr, r.stderr
