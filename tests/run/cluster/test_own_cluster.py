"""`assay run --executor ray` with no `--address` starts a cluster of its own: it neither reads
nor writes the user's home (a ``~/.ray/auth_token`` from an earlier ``ray start`` once made
every worker fail authentication), and it joins no cluster that happens to run on the machine."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, assay_env, cli_timeout

pytestmark = pytest.mark.timeout(600)
#: `run examples/starter --agent oracle --executor ray` with a cluster of its own, measured: 10.7 s of
#: CPU (82 s wall) at a load of 4.4 per CPU, the cluster's start most of it
OWN_CLUSTER_RUN_CPU_S = 11.0


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def run_with_home(home: Path, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`assay run examples/starter ARGS --executor ray` (no address) with HOME and no Ray settings."""
    env = {**assay_env(), "HOME": str(home)}
    for var in ("RAY_ADDRESS", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        env.pop(var, None)
    return subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(ROOT / "examples" / "starter"),
                           *args, "--executor", "ray", "--out", str(tmp_path / "run")],
                          capture_output=True, text=True, env=env, cwd=tmp_path,
                          timeout=cli_timeout(OWN_CLUSTER_RUN_CPU_S))


def test_own_cluster_leaves_home_alone_and_ignores_a_stale_token(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ray").mkdir(parents=True)
    (home / ".ray" / "auth_token").write_text("stale-token-of-an-earlier-ray-start\n")
    before = _tree(home / ".ray")
    out = run_with_home(home, tmp_path, "--agent", "oracle,nop", "--json")
    assert out.returncode in (0, 1), out.stderr[-2000:]
    assert _tree(home / ".ray") == before  # the user's token neither read into use nor rewritten
    assert not list(home.glob(".ray/*session*")) and not (home / ".ray" / "ray_current_cluster").exists()
    results = [json.loads(p.read_text()) for p in (tmp_path / "run").glob("trials/*/attempts/*/result.json")]
    verdicts = {(r["agent"], r["end_state"]) for r in results}
    assert ("oracle", "pass") in verdicts and ("nop", "fail") in verdicts
    assert not any(r["end_state"] == "infra_error" for r in results)


def test_own_cluster_does_not_write_a_token_into_an_empty_home(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    out = run_with_home(home, tmp_path, "--agent", "oracle", "-q")
    assert out.returncode == 0, out.stderr[-2000:]
    assert not (home / ".ray").exists(), sorted(os.listdir(home / ".ray"))
