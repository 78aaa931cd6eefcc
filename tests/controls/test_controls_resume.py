"""A run with controls resumes: the controls are derived again from the task folders, to the
same digests, so the suite digest the manifest recorded matches and nothing runs twice; the
manifest names each control's origin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from assay.run.controls_run import suite_of_run
from assay.run.runner import resume_run
from assay.store.rundir import RunDir
from tests.conftest import assay_env, cli_timeout, write_suite, write_task


def test_a_run_with_controls_resumes_and_its_manifest_names_each_control(tmp_path: Path) -> None:
    s = write_suite(tmp_path / "suite")
    write_task(s, "echo", task={"category": "code", "predicates": [
        {"id": "said", "kind": "file_contains", "path": "said.txt", "text": "good morning"}]},
        prompt="Write `good morning` into said.txt.", solution="echo 'good morning' > said.txt\n")
    out = tmp_path / "run"
    cli = subprocess.run([sys.executable, "-m", "assay.cli.main", "run", str(s), "--agent", "oracle", "--sandbox",
                          "host", "--out", str(out), "--controls", "--json", "-q"], capture_output=True, text=True,
                         env=assay_env(), timeout=cli_timeout())
    assert cli.returncode == 0, cli.stderr
    score = json.loads(cli.stdout)["score"]
    assert score["controls"]["agents"]["oracle"] == {"trials": 2, "scored": 2, "passes": 0, "pass_rate": 0.0}
    assert score["agents"]["oracle"]["passes"] == 1 and score["agents"]["oracle"]["trials"] == 1
    manifest = RunDir.open(out).manifest()
    assert manifest.plan.controls is True
    controls = {t.id: t.control for t in manifest.tasks if t.control}
    assert set(controls) == {"echo--ctl-swap", "echo--ctl-unreach"}
    assert controls["echo--ctl-swap"]["rule"] == "check-contradicts-instruction"
    on_node = suite_of_run(manifest)  # what a cluster's hub and workers load: the same controls, the same digest
    assert on_node.digest == manifest.suite["digest"] and set(controls) <= {t.id for t in on_node.tasks}
    resume_run(out)  # refused if the derived controls had another digest
    rd = RunDir.open(out)
    assert {t: rd.attempts_of(t) for t in manifest.plan.trials} == {t: [1] for t in manifest.plan.trials}


def test_a_held_out_controls_passes_are_shown_under_digest_labels_without_what_changed() -> None:
    from assay.records.scores import ControlPass, ControlsSummary
    from assay.report.controls import withhold_controls
    from assay.report.heldout import task_label

    c = ControlsSummary(passes=[ControlPass(trial_id="secret--ctl-swap.base.a.r1", task_id="secret--ctl-swap",
                                            control_of="secret", rule="check-contradicts-instruction",
                                            changed="expected 'the answer' -> 'assay-control-1'", agent="a")])
    [p] = withhold_controls(c, frozenset({"secret--ctl-swap"}), task_label).passes  # type: ignore[union-attr]
    assert "secret" not in p.trial_id + p.task_id + p.control_of and "answer" not in p.changed
    assert p.trial_id.endswith(".base.a.r1") and p.rule == "check-contradicts-instruction"
