"""A run with controls resumes: the controls are derived again from the task folders, to the
same digests, so the suite digest the manifest recorded matches and nothing runs twice; the
manifest names each control's origin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from assay.run.runner import resume_run
from assay.store.rundir import RunDir
from tests.conftest import assay_env, write_suite, write_task


def test_a_run_with_controls_resumes_and_its_manifest_names_each_control(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "echo", task={"category": "code", "predicates": [
        {"id": "said", "kind": "file_contains", "path": "said.txt", "text": "good morning"}]},
        prompt="Write `good morning` into said.txt.", solution="echo 'good morning' > said.txt\n")
    out = tmp_path / "run"
    cli = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", "oracle", "--sandbox",
                          "host", "--out", str(out), "--controls", "--json", "-q"], capture_output=True, text=True,
                         env=assay_env())
    assert cli.returncode == 0, cli.stderr
    score = json.loads(cli.stdout)["score"]
    assert score["controls"]["agents"]["oracle"] == {"trials": 2, "scored": 2, "passes": 0, "pass_rate": 0.0}
    assert score["agents"]["oracle"]["passes"] == 1 and score["agents"]["oracle"]["trials"] == 1
    manifest = RunDir.open(out).manifest()
    assert manifest.plan.controls is True
    controls = {t.id: t.control for t in manifest.tasks if t.control}
    assert set(controls) == {"echo--ctl-swap", "echo--ctl-unreach"}
    assert controls["echo--ctl-swap"]["rule"] == "check-contradicts-instruction"
    resume_run(out)  # refused if the derived controls had another digest
    rd = RunDir.open(out)
    assert {t: rd.attempts_of(t) for t in manifest.plan.trials} == {t: [1] for t in manifest.plan.trials}
