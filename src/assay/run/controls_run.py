"""The run matrix's control axis (``assay run --controls``): each task's impossible-task
controls (:mod:`assay.spec.controls`) derived into a private temporary folder for the run's
life, added to the suite as tasks, and marked in the manifest so the scorer keeps them beside,
never inside, the capability score. A resume derives them again: the derivation is a pure
function of the task folder, so the suite digest the manifest recorded must match."""

from __future__ import annotations

import atexit
import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from assay.records.manifest import RunManifest
from assay.spec.controls import ControlSet, derive_controls, with_controls
from assay.spec.load import LoadedSuite, load_suite


@contextmanager
def controls_added(suite: LoadedSuite, tasks: list[str] | None,
                   enabled: bool = True) -> Iterator[tuple[LoadedSuite, ControlSet, list[str] | None]]:
    """(the suite with its controls, the control set, the task filter with the controls of the
    chosen tasks added); the folders are removed when the block ends."""
    if not enabled:
        yield suite, ControlSet(), tasks
        return
    dest = Path(tempfile.mkdtemp(prefix="assay-controls-"))
    try:
        cs = derive_controls(suite, dest)  # every task's, so a resume's suite digest is the start's
        chosen = None if tasks is None else [*tasks, *(c.task.id for c in cs.controls if c.of in tasks)]
        yield with_controls(suite, cs), cs, chosen
    finally:
        shutil.rmtree(dest, ignore_errors=True)


def suite_of_run(manifest: RunManifest) -> LoadedSuite:
    """The suite a run's manifest names, with its controls when the run has them (a cluster's hub
    and workers load it themselves: the controls are derived again there, in a temporary folder
    removed when the process ends, to the digests the head recorded)."""
    suite = load_suite(manifest.suite["path"])
    if not manifest.plan.controls:
        return suite
    dest = Path(tempfile.mkdtemp(prefix="assay-controls-"))
    atexit.register(shutil.rmtree, dest, True)
    return with_controls(suite, derive_controls(suite, dest))


def mark_controls(manifest: RunManifest, cs: ControlSet) -> RunManifest:
    """The manifest with each control task's record naming its origin (rule, what changed, proof)."""
    if not cs.controls:
        return manifest
    origins = {c.task.id: c.origin() for c in cs.controls}
    tasks = [t.model_copy(update={"control": origins[t.id]}) if t.id in origins else t for t in manifest.tasks]
    return manifest.model_copy(update={"tasks": tasks})


__all__ = ["controls_added", "mark_controls", "suite_of_run"]
