"""The exposure audit: it passes on what is private, and names every planted leak by its path.

Each planted leak is one a suite author could really make: a hidden file bound into the agent's
sandbox by an extra mount, the suite folder mounted whole, an expected value put into a
variant's ``env:``, the run directory mounted, a suite kept inside a folder the harness binds
unwalked. The clean case runs the same probes over the same task, so a pass means "looked and
found nothing", never "did not look".
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from assay.agents.base import AgentAdapter
from assay.agents.builtin import NopAgent, OracleAgent
from assay.run.exposure import ExposureReport, audit_exposure, judge_sightings
from assay.sandbox.base import Mount
from assay.spec.load import LoadedTask, load_suite
from tests.conftest import write_suite, write_task

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p.parent for p in (ROOT / "examples").glob("*/suite.yaml"))
ANSWER = "the-answer-is-42-blue"


class Mounting(NopAgent):
    """A do-nothing agent with extra mounts (what a careless adapter or command agent declares)."""

    def __init__(self, name: str, mounts: list[Mount]):
        super().__init__({})
        self.name = name
        self._mounts = mounts

    def mounts(self, task: LoadedTask) -> list[Mount]:
        return list(self._mounts)


def suite_with_secrets(root: Path, **variant_env: str) -> Path:
    s = write_suite(root / "suite")
    variants = [{"id": "hinted", "env": variant_env}] if variant_env else []
    write_task(s, "t", task={"category": "code", "setup": "setup.sh", "variants": variants, "predicates": [
        {"id": "answer", "kind": "file_contains", "path": "out.py", "text": ANSWER},
        {"id": "checked", "kind": "pytest"}]},
        workspace={"notes.md": "write the answer to out.py\n"},
        hidden={"tests/test_out.py": f"from out import ANSWER\n\n\ndef test_out():\n    assert ANSWER == '{ANSWER}'\n"},
        files={"setup.sh": "echo prepared > prepared.txt\n"}, solution=f"echo \"ANSWER = '{ANSWER}'\" > out.py\n")
    return s


def audit(suite: Path, agents: list[AgentAdapter], sandbox: str, keep: Path | None = None) -> ExposureReport:
    return audit_exposure(suite, agents=agents, sandbox=sandbox, keep=keep)


def test_a_task_with_setup_hidden_tests_and_solution_shows_the_agent_nothing(tmp_path: Path, bwrap: str) -> None:
    s = suite_with_secrets(tmp_path)
    rep = audit(s, [OracleAgent(), NopAgent()], bwrap)
    assert {a for _, _, a in rep.audited} == {"probe-oracle", "probe-nop"}
    assert rep.ok, [leak.line() for leak in rep.leaks]


def test_a_hidden_file_bound_by_an_extra_mount_is_named(tmp_path: Path, bwrap: str) -> None:
    s = suite_with_secrets(tmp_path)
    copy = tmp_path / "elsewhere" / "test_out.py"  # the hidden test, kept outside the task folder
    copy.parent.mkdir()
    shutil.copy(s / "tasks/t/hidden/tests/test_out.py", copy)
    rep = audit(s, [Mounting("leaky", [Mount(copy.parent, "/opt/extra")])], bwrap)
    assert not rep.ok
    [leak] = [x for x in rep.leaks if x.kind == "task_file"]
    assert leak.path == "/opt/extra/test_out.py" and "hidden/tests/test_out.py" in leak.what
    assert any(x.kind == "expected_value" and x.path == "/opt/extra/test_out.py" for x in rep.leaks)


def test_a_hidden_file_slipped_under_usr_is_still_found(tmp_path: Path, bwrap: str) -> None:
    """/usr is vouched for and not walked, but a mount below it is walked all the same."""
    s = suite_with_secrets(tmp_path)
    copy = tmp_path / "elsewhere" / "test_out.py"
    copy.parent.mkdir()
    shutil.copy(s / "tasks/t/hidden/tests/test_out.py", copy)
    target = next(p for p in sorted(Path("/usr/share").glob("*/*")) if p.is_file() and not p.is_symlink())
    rep = audit(s, [Mounting("sneaky", [Mount(copy, str(target))])], bwrap)  # bound over a file that is there
    assert [x.path for x in rep.leaks if x.kind == "task_file"] == [str(target)], [x.line() for x in rep.leaks]


def test_a_sandbox_the_probe_never_saw_is_no_pass(tmp_path: Path, bwrap: str) -> None:
    """A mount the sandbox cannot make (a new file under the read-only /usr): the attempt ends
    before the probe runs, and the audit says it could not look."""
    s = suite_with_secrets(tmp_path)
    rep = audit(s, [Mounting("unmountable", [Mount(s / "prompt-copy", "/usr/no-such-dir/x")])], bwrap)
    assert not rep.ok and rep.leaks and all(x.kind == "probe" and "not probed" in x.what for x in rep.leaks)


def test_the_suite_folder_mounted_whole_is_named_by_mount_and_file(tmp_path: Path, bwrap: str) -> None:
    s = suite_with_secrets(tmp_path)
    rep = audit(s, [Mounting("suite-mounter", [Mount(s, "/opt/suite")])], bwrap)
    kinds = {(x.kind, x.path) for x in rep.leaks}
    assert ("mount", "/opt/suite") in kinds
    assert ("task_file", "/opt/suite/tasks/t/task.yaml") in kinds
    assert ("task_file", "/opt/suite/tasks/t/solution/solve.sh") in kinds


def test_a_mount_of_a_task_path_is_a_private_copy_without_the_secrets(tmp_path: Path, bwrap: str) -> None:
    """An adapter that asks for the task folder itself gets a staged copy: no task.yaml, no
    hidden/, no path back to the task in the mount table."""
    s = suite_with_secrets(tmp_path)
    rep = audit(s, [Mounting("task-mounter", [Mount(s / "tasks" / "t", "/opt/task")])], bwrap)
    assert not [x for x in rep.leaks if x.kind in ("mount", "expected_value")], [x.line() for x in rep.leaks]
    leaked = {x.what for x in rep.leaks if x.kind == "task_file"}
    assert not any("task.yaml" in w or "hidden/" in w for w in leaked), leaked


def test_an_expected_value_in_a_variants_env_is_named(tmp_path: Path, bwrap: str) -> None:
    s = suite_with_secrets(tmp_path, HINT=f"try {ANSWER}")
    rep = audit(s, [NopAgent()], bwrap)
    [leak] = rep.leaks
    assert (leak.variant, leak.kind, leak.path) == ("hinted", "expected_value", "$HINT")
    assert "predicate 'answer'" in leak.what


def test_the_run_directory_mounted_is_named(tmp_path: Path, bwrap: str) -> None:
    s = suite_with_secrets(tmp_path)
    keep = tmp_path / "run"
    rep = audit(s, [Mounting("run-mounter", [Mount(tmp_path, "/opt/all")])], bwrap, keep=keep)
    assert any(x.kind == "mount" and "run directory" in x.what for x in rep.leaks), [x.line() for x in rep.leaks]


def test_a_suite_inside_a_vouched_folder_is_named(tmp_path: Path, bwrap: str) -> None:
    """An install folder (bound at its own path, not walked) that holds the suite."""
    s = suite_with_secrets(tmp_path)
    rep = audit(s, [Mounting("installed-beside", [Mount(tmp_path, str(tmp_path))])], bwrap)
    assert any(x.kind == "vouched_path" and x.path == str(tmp_path) for x in rep.leaks)


def test_an_audit_that_probed_nothing_does_not_pass(tmp_path: Path) -> None:
    s = suite_with_secrets(tmp_path)
    leaks, audited = judge_sightings(load_suite(s), [], tmp_path / "run")
    assert ExposureReport("t", leaks, audited).ok is False


@pytest.mark.parametrize("suite", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_every_shipped_example_passes_the_audit(suite: Path, tmp_path: Path, bwrap: str) -> None:
    """Every agent kind that runs here (oracle, reference, a command agent, each installed
    product) over every task and variant of every shipped suite."""
    rep = audit_exposure(suite, sandbox=bwrap, model="scripted")
    assert rep.audited, rep.not_audited
    assert rep.ok, [leak.line() for leak in rep.leaks]


def test_validate_exposure_on_the_command_line_names_the_leak_and_exits_1(tmp_path: Path, bwrap: str) -> None:
    from typer.testing import CliRunner

    from assay.cli.main import new_app

    app = new_app(None)
    s = suite_with_secrets(tmp_path, HINT=f"try {ANSWER}")
    res = CliRunner().invoke(app, ["validate", str(s), "--exposure", "--sandbox", bwrap], terminal_width=300)
    assert res.exit_code == 1, res.output
    assert "LEAK" in res.output and "expected_value '$HINT'" in res.output
    clean = suite_with_secrets(tmp_path / "clean")
    res = CliRunner().invoke(app, ["validate", str(clean), "--exposure", "--sandbox", bwrap], terminal_width=300)
    assert res.exit_code == 0, res.output
    assert "nothing of the tasks" in res.output and "LEAK" not in res.output


def test_validate_exposure_refuses_an_unisolated_sandbox(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from assay.cli.main import main

    assert main(["validate", str(suite_with_secrets(tmp_path)), "--exposure", "--sandbox", "host"]) == 2
    assert "isolated sandbox" in capsys.readouterr().err
