"""A command agent's ``version_command`` is agent-supplied code: it runs in the sandbox, never on
the host with the harness's environment."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.agents.command import CommandAgent
from assay.sandbox.bwrap.backend import BwrapBackend


@pytest.fixture(autouse=True)
def _bwrap() -> None:
    status = BwrapBackend().status()
    if not status.usable:
        pytest.skip(f"bubblewrap cannot sandbox here: {status.detail}")


def agent(version_command: str | list[str]) -> CommandAgent:
    return CommandAgent({"name": "v", "kind": "command", "command": ["/bin/true"], "version_command": version_command})


def test_version_command_runs_sandboxed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    marker = tmp_path / "written-on-host"
    monkeypatch.setenv("HARNESS_SECRET", "sk-harness-only")
    info = agent(f"echo 1.2.3-$HARNESS_SECRET; touch {marker}; echo $? >&2").info()
    assert info.usable and info.version == "1.2.3-"  # the harness's environment is not there
    assert not marker.exists()  # and the host file system is not writable from it


def test_failing_or_silent_version_command_makes_the_agent_unusable() -> None:
    info = agent(["/bin/sh", "-c", "echo broken >&2; exit 4"]).info()
    assert not info.usable and "exited 4" in info.detail and "broken" in info.detail
    silent = agent(["/bin/true"]).info()
    assert not silent.usable and "printed nothing" in silent.detail
