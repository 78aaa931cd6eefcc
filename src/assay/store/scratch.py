"""Scratch space of a run: one folder per run directory, so a resume can clean up after a crash.

Each attempt works in scratch (a fresh workspace, the agent's home, the verifier's copy).
A runner killed mid-attempt leaves that behind; its path is derived from the run directory
(and the user), so the next runner of the same run directory, holding the run lock, knows
that everything in it is stale and removes it before starting.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from assay.untrusted.tree import remove_untrusted


def scratch_root(run_dir: Path | str) -> Path:
    """The scratch folder of a run directory (not created)."""
    key = hashlib.sha256(str(Path(run_dir).resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"assay-scratch-{os.getuid()}-{key}"


def make_scratch(run_dir: Path | str) -> Path:
    """Create the scratch folder, removing what an interrupted runner left there.

    Call only while holding the run lock (:mod:`assay.store.lock`): another live runner of the
    same run directory would lose its workspaces."""
    root = scratch_root(run_dir)
    remove_scratch(run_dir)
    root.mkdir(mode=0o700)
    return root


def remove_scratch(run_dir: Path | str) -> bool:
    """Remove the scratch folder of a run directory; True if there was one."""
    root = scratch_root(run_dir)
    if root.is_symlink():
        root.unlink()  # never follow a link someone planted in the shared temp folder
        return True
    if not root.exists():
        return False
    remove_untrusted(root)  # agent-written: any depth, unreadable folders, never through a link
    return True
