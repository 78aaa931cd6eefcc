"""A real collection often holds a task whose image cannot be built here (media fetched from a host
this machine cannot reach, a package compiled past its build time). The run refuses the whole
suite before anything is written (no trial runs on a half-built image, and a build failure is
never scored as the agent's), and its refusal names each such task and the flag that runs the
rest: ``--exclude`` (``-x``), ids or shell patterns, recorded in the plan and said beside the
scores, so a score over part of a suite is never read as the whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from assay.cli.main import main
from assay.environments.store import ImageStore
from assay.importers import import_suite

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "import"


@pytest.fixture
def half_buildable(tmp_path: Path) -> Path:
    """Two Harbor tasks that build and one that cannot (its image fetches what is not here)."""
    src = tmp_path / "src"
    for name in ("good-a", "good-b", "broken"):
        shutil.copytree(FIXTURES / "harbor/simple-task", src / name)
    with open(src / "broken/environment/Dockerfile", "a") as f:
        f.write("\nRUN echo cannot fetch the media here >&2 && exit 3\n")
    suite = tmp_path / "suite"
    import_suite("harbor", src, suite)
    return suite


def _states(out: Path) -> dict[tuple[str, str], str]:
    rows = [json.loads(p.read_text()) for p in out.glob("trials/*/attempts/*/result.json")]
    return {(r["task_id"], r["agent"]): r["end_state"] for r in rows}


def test_the_refusal_names_the_task_and_the_flag_that_runs_the_rest(half_buildable: Path, tmp_path: Path,
                                                                    image_store: ImageStore, capsys) -> None:
    out = tmp_path / "run"
    assert main(["run", str(half_buildable), "-a", "oracle", "-q", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert "broken" in err and "Dockerfile" in err and "exit 3" in err, err
    assert "--exclude broken" in " ".join(err.split()), err  # the fix, ready to paste
    assert not out.exists()  # nothing written: the refusal loses nothing and starts nothing

    assert main(["run", str(half_buildable), "-a", "oracle,nop", "-q", "-o", str(out), "--exclude", "broken"]) == 0
    assert _states(out) == {(t, a): ("pass" if a == "oracle" else "fail")
                            for t in ("good-a", "good-b") for a in ("oracle", "nop")}
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["plan"]["excluded"] == ["broken"]
    assert not [t for t in manifest["plan"]["trials"] if t.startswith("broken")]
    assert main(["verify", str(out)]) == 0
    capsys.readouterr()
    assert main(["score", str(out), "--json"]) == 0
    flags = json.loads(capsys.readouterr().out)["measured"]["flags"]
    assert any("broken" in f and "--exclude" in f for f in flags), flags  # said beside the scores


def test_exclude_takes_patterns_lists_and_the_short_flag(half_buildable: Path, tmp_path: Path,
                                                         image_store: ImageStore) -> None:
    out = tmp_path / "run"
    assert main(["run", str(half_buildable), "-a", "oracle", "-q", "-o", str(out), "-x", "bro*,good-b"]) == 0
    assert _states(out) == {("good-a", "oracle"): "pass"}
    assert json.loads((out / "manifest.json").read_text())["plan"]["excluded"] == ["broken", "good-b"]


@pytest.mark.parametrize(("argv", "said"), [
    (["--exclude", "brokn"], "--exclude brokn matches no task"),  # a typo never runs everything silently
    (["-x", "*"], "nothing left to run"),
    (["-t", "good-a", "-x", "good-a"], "nothing left to run"),
])
def test_an_exclusion_that_excludes_nothing_or_everything_is_refused(half_buildable: Path, tmp_path: Path,
                                                                      argv: list[str], said: str, capsys) -> None:
    """Refused before any image is built (no image_store needed) and before anything is written."""
    out = tmp_path / "run"
    assert main(["run", str(half_buildable), "-a", "oracle", "-q", "-o", str(out), *argv]) == 2
    assert said in " ".join(capsys.readouterr().err.split())
    assert not out.exists()


@pytest.mark.parametrize(("choice", "ran"), [(["-x", "broken"], ["good-a", "good-b"]), (["-t", "good-a"], ["good-a"])])
def test_a_resume_builds_the_planned_tasks_images_only(half_buildable: Path, tmp_path: Path, image_store: ImageStore,
                                                       choice: list[str], ran: list[str]) -> None:
    """A resume built every image of the suite again, so a run that had left the broken task out
    (by --exclude, or by --task) could never be resumed."""
    out = tmp_path / "run"
    assert main(["run", str(half_buildable), "-a", "oracle", "-q", "-o", str(out), *choice]) == 0
    assert main(["run", "--resume", str(out), "-q"]) == 0
    assert _states(out) == {(t, "oracle"): "pass" for t in ran}
