"""Fail closed by default (issue 28): a run whose trials all broke is never green, and a missing
optional extra is named, with the install that works, before anything is written."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import assay._optional as optional
from assay.errors import DEFAULT_MAX_INFRA_RATE, UsageError
from assay.run import RunOptions, start_run
from tests.conftest import assay_env, cli_timeout, write_suite, write_task

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_a_run_whose_every_trial_is_infra_error_does_not_exit_0_by_default(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "s")
    write_task(s, "badsetup", task={"category": "code", "setup": "setup.sh", "budget": {"wall_time_s": 60},
                                    "predicates": [{"id": "f", "kind": "file_exists", "path": "a.py"}]},
               workspace={"a.py": "x = 1\n"}, files={"setup.sh": "exit 3\n"})
    r = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", "nop", "--sandbox", "host",
                        "--out", str(tmp_path / "r"), "-q", "--max-retries", "0"],
                       capture_output=True, text=True, env=assay_env(), timeout=cli_timeout())
    assert r.returncode == 4, r.stderr
    assert f"above --max-infra-rate {DEFAULT_MAX_INFRA_RATE:g} (the default" in r.stderr
    assert 0 < DEFAULT_MAX_INFRA_RATE < 1


def test_a_world_suite_without_the_mcp_extra_is_refused_before_anything_is_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(optional.EXTRA_MODULES, "mcp", ("assay_test_not_installed_mcp",))
    out = tmp_path / "run"
    with pytest.raises(UsageError) as e:
        start_run(RunOptions(suite=EXAMPLES / "bookkeeping", agents=["nop"], out=out, sandbox="host"))
    msg = str(e.value)
    assert "world task(s)" in msg and "assay[mcp]" in msg and "pip install -e '.[mcp]'" in msg
    assert not out.exists()


def test_ray_executor_without_ray_is_refused_before_anything_is_written(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from assay.run.schedule import ExecutorOptions

    monkeypatch.setitem(optional.EXTRA_MODULES, "ray", ("assay_test_not_installed_ray",))
    out = tmp_path / "run"
    s = write_suite(tmp_path / "s")
    write_task(s, "t", task={"category": "code", "predicates": [{"id": "f", "kind": "file_exists", "path": "x"}]})
    with pytest.raises(UsageError, match=r"--executor ray .*pip install -e '\.\[ray\]'"):
        start_run(RunOptions(suite=s, agents=["nop"], out=out, sandbox="host", executor=ExecutorOptions("ray", None)))
    assert not out.exists()


def test_no_doc_or_example_shows_an_install_of_an_unpublished_distribution() -> None:
    root = EXAMPLES.parent
    offenders = []
    for path in [root / "README.md", *(root / "docs").rglob("*.md"), *(root / "examples").rglob("*.yml"),
                 *(root / "src").rglob("*.py")]:
        for n, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if "pip install 'assay[" in line or "pip install assay[" in line or 'pip install "assay[' in line:
                offenders.append(f"{path.relative_to(root)}:{n}")
    assert offenders == []


@pytest.mark.parametrize("option, hidden", [
    (["--otlp", "http://127.0.0.1:9"], "opentelemetry.exporter.otlp.proto.http"),
    (["--otlp", "http://127.0.0.1:9"], "opentelemetry.sdk"),
    (["--metrics-port", "0"], "prometheus_client"),
])
def test_a_run_asking_for_observe_without_its_packages_is_refused_before_anything_is_written(
        calc_suite: Path, tmp_path: Path, option: list[str], hidden: str) -> None:
    # only part of the extra installed (OpenTelemetry's API comes with other packages; its SDK and
    # exporter do not): the package the option imports is what is checked, and the extra named
    out = tmp_path / "r"
    code = ("import sys\n"
            f"sys.modules[{hidden!r}] = None\n"  # as if not installed: an import of it fails
            "from assay.cli.main import main\n"
            f"sys.exit(main(['run', {str(calc_suite)!r}, '--agent', 'nop', '--sandbox', 'host', '-q', "
            f"'--out', {str(out)!r}, *{option!r}]))\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=assay_env(),
                       timeout=cli_timeout())
    assert r.returncode == 2, r.stderr[-2000:]
    assert "assay[observe]" in r.stderr and "pip install -e '.[observe]'" in r.stderr and option[0] in r.stderr
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert not out.exists()
