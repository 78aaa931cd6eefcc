"""A task image whose WORKDIR covers the folder where this host keeps the harness's own Python
(`WORKDIR /root`: 133 of TermiGen's tasks, every task of a real math-modelling collection, and
this machine keeps Python under /root). The workspace is bound there and the harness's install
is left out, so the oracle and the do-nothing agent run and the verifier judges; an agent that
needs the harness's Python there is an infrastructure error naming the folder, never the agent's
failure. Before, every attempt of such a task was `infra_error` (`sandbox_workdir`)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from assay.run import RunOptions, start_run
from assay.sandbox.bwrap import rootfs
from assay.environments.store import ImageStore
from tests.conftest import write_suite, write_task
from tests.environments.conftest import shared_env


def _top_of_harness() -> str:
    """The top folder holding this host's harness install (``/root`` here), as a task workdir."""
    return "/" + Path(rootfs.python_roots()[-1]).parts[1]


def test_a_workdir_over_the_harness_install_runs_oracle_and_nop(tmp_path: Path, image_store: ImageStore) -> None:
    top = _top_of_harness()
    if top in ("/usr", "/etc", "/tmp", "/opt", "/var", "/run", "/proc", "/dev", "/sys", "/bin", "/lib", "/boot"):
        pytest.skip(f"the harness lives under {top}, which no task may take as its workdir")
    s = write_suite(tmp_path / "s")
    write_task(s, "t", task={"category": "code", "workdir": top, "environment": shared_env().model_dump(exclude_none=True),
                             "model_script": "model.yaml",
                             "predicates": [{"id": "out", "kind": "file_contains", "path": "out.txt", "text": "done"}]},
               workspace={"in.txt": "x\n"}, solution="echo done > out.txt\n",
               files={"model.yaml": yaml.safe_dump({"turns": [{"text": "nothing to do"}]})})
    # what an audit runs: the oracle, the do-nothing agent, the verifier (no model, no relay)
    out = start_run(RunOptions(suite=s, agents=["oracle", "nop"], sandbox="bwrap", out=tmp_path / "run"))
    got = {r.agent: r for r in out.results}
    assert got["oracle"].end_state.value == "pass", (got["oracle"].reason, got["oracle"].errors)
    assert got["nop"].end_state.value == "fail", (got["nop"].reason, got["nop"].errors)
    assert out.manifest.tasks[0].workdir == top
    # an agent run by the harness's Python (and the relay a model endpoint needs): the harness's error
    [ref] = start_run(RunOptions(suite=s, agents=["reference"], model="scripted", sandbox="bwrap",
                                 out=tmp_path / "run2")).results
    assert (ref.end_state.value, ref.reason) == ("infra_error", "sandbox_workdir"), (ref.reason, ref.errors)
    assert any(top in e and "harness" in e for e in ref.errors), ref.errors
