"""One code-executing predicate's own sandbox over its own fresh copy of the snapshot.

Nothing a predicate's process writes is seen by any other predicate: its workspace is a new
copy, and hidden tests, verifier code and the trace are mounted read-only from pristine copies
the harness owns. When the predicate ends, whatever it left running is killed and reported
(:class:`Leftovers`), which fails the predicate with an incident.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass, field
from pathlib import Path

from assay.records.incident import Incident, incident
from assay.sandbox import overlay_ws
from assay.sandbox.base import CleanupReport, Mount, Sandbox, SandboxBackend, SandboxSpec
from assay.sandbox.image_root import ImageRoot
from assay.spec.budget import Limits, NetworkProfile
from assay.untrusted.tree import remove_untrusted, walk_untrusted
from assay.verify.snapshot import copy_snapshot

#: where read-only verifier material appears inside a predicate's sandbox
TARGETS = {"hidden": "/verifier/hidden", "code": "/verifier/code", "events": "/verifier/events.jsonl",
           "input": "/verifier/input", "cases": "/verifier/cases",
           "tests": "/tests", "logs": "/logs/verifier"}  # tests, logs: a task's own test script (reward_file)
#: the mounts a predicate's process may write: its own scratch folder, read back by the harness, and
#: the copy of the task's tests made for this verification alone (a script may build beside them, as
#: in Harbor's container; the script itself is pinned read-only: ``open_site``'s ``pinned``)
WRITABLE = frozenset({"logs", "tests"})


@dataclass
class ExecSite:
    """A live sandbox for one predicate: ``work`` is where its fresh snapshot copy is seen inside
    (the task's ``workdir``, where the agent saw its workspace)."""

    sandbox: Sandbox
    host_dir: Path
    mounts: dict[str, Mount] = field(default_factory=dict)

    @property
    def work(self) -> str:
        return self.sandbox.workspace_path

    @property
    def inputs(self) -> str:
        """Inside path of the read-only case inputs given to :func:`open_site`."""
        return self.path("cases")

    def path(self, name: str) -> str:
        """Inside path of a read-only mount (``hidden``, ``code``, ``events``, ``input``)."""
        return self.sandbox.mount_path(self.mounts[name])


async def open_site(backend: SandboxBackend, snapshot: Path, host_dir: Path, *, label: str, limits: Limits,
                    ro: dict[str, Path], inputs: dict[str, str] | None = None, workdir: str = "/workspace",
                    env: dict[str, str] | None = None, image: ImageRoot | None = None,
                    keep: Path | None = None, pinned: dict[str, Path] | None = None) -> ExecSite:
    """Copy ``snapshot`` to ``host_dir/ws`` (over a frozen overlay workspace: a fresh overlay layer
    on it, :func:`assay.sandbox.overlay_ws.stack`) and start a verifier sandbox with it at ``workdir``
    (the path the agent saw; over an image without one, the image's WORKDIR), each of ``ro``
    (name -> host path) mounted read-only, ``inputs`` (relative path -> text, written by the
    harness before anything runs) mounted read-only as ``cases``; ``env``: the task's variables
    for the verifier; ``keep``: a verifier image's own folder at ``workdir``, laid over the copy
    (:func:`lay_over`), so its files there are never the agent's; ``pinned``: files (path inside ->
    host path) bound read-only over what the mounts show there, made after them (the test script in
    its writable folder: code the script runs can neither rewrite it in place, which bash would read
    on, nor unlink it)."""
    ws = host_dir / "ws"
    host_dir.mkdir(parents=True)
    if overlay_ws.stack(snapshot, ws, host_dir / "ws.layers") is None:  # a frozen overlay: a layer over it
        copy_snapshot(snapshot, ws)
    if keep is not None:
        lay_over(keep, ws)
    if inputs is not None:
        cases = host_dir / "cases"
        cases.mkdir(mode=0o755)
        for rel, text in inputs.items():
            (cases / rel).parent.mkdir(parents=True, exist_ok=True, mode=0o755)
            (cases / rel).write_text(text)
        ro = {**ro, "cases": cases}
    mounts = {name: Mount(source=src, target=TARGETS[name], writable=name in WRITABLE) for name, src in ro.items()}
    pins = tuple(Mount(source=src, target=inside, writable=False) for inside, src in (pinned or {}).items())
    sb = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none, identity="verifier",
                                          workdir=workdir, env=dict(env or {}), limits=limits,
                                          mounts=(*mounts.values(), *pins), label=label, image=image))
    return ExecSite(sb, host_dir, mounts)


def lay_over(trusted: Path, ws: Path) -> int:
    """Every entry of ``trusted`` (a verifier image's own files at the workdir) put into ``ws`` at
    its path, replacing whatever the agent left there (a file, a folder, a link: removed without
    following, then made anew): the verifier runs its own grader, never one the agent wrote at the
    same path. Returns the entries laid."""
    if not trusted.is_dir() or trusted.is_symlink():
        return 0
    n = 0
    for rel, full, st in walk_untrusted(trusted, max_entries=None, deadline_s=None):
        if st is None:
            continue
        dest = ws / os.fsdecode(rel)
        kind = stat.S_IFMT(st.st_mode)
        there = os.lstat(dest) if os.path.lexists(dest) else None
        if there is not None and not (kind == stat.S_IFDIR and stat.S_ISDIR(there.st_mode)):
            remove_untrusted(dest)
        if kind == stat.S_IFDIR:
            dest.mkdir(mode=stat.S_IMODE(st.st_mode) | 0o700, exist_ok=True)
        elif kind == stat.S_IFLNK:
            dest.symlink_to(os.readlink(full))
        elif kind == stat.S_IFREG:
            shutil.copy2(full, dest, follow_symlinks=False)
        else:
            continue
        n += 1
    return n


def leftover_incident(predicate: str, report: CleanupReport) -> Incident:
    return incident("verifier_leftover_process", "high",
                    f"{len(report.leftover_pids)} process(es) left running in the verifier sandbox of {predicate!r}",
                    predicate=predicate, commands=list(report.leftover_commands)[:10])


async def close_site(site: ExecSite) -> CleanupReport:
    """Destroy the sandbox (killing what is left; idempotent) and drop the copy."""
    try:
        return await site.sandbox.destroy()
    finally:
        overlay_ws.release(site.host_dir / "ws")
        remove_untrusted(site.host_dir / "ws")
        remove_untrusted(site.host_dir / "ws.layers")
