"""A source task folder checked before anything of it is read: a third-party collection is hostile
input. A link that leads out of the task folder would have the importer read the host's files into
the suite (a prompt holding a secret, sent to a model and shown in every report; a build context
copying the host's folders into the agent's image); an entry that is not a file, folder or link (a
FIFO, a device) would hang or mislead a reader. Links that stay inside are kept as links."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from assay.untrusted.tree import OVERFLOW, walk_untrusted

_KINDS = {stat.S_IFIFO: "a FIFO", stat.S_IFSOCK: "a socket", stat.S_IFCHR: "a character device",
          stat.S_IFBLK: "a block device"}


def source_problem(src: Path, collection: Path | None = None) -> str | None:
    """Why the task folder ``src`` is not imported (None: it may be read). ``collection``: the
    folder the user gave; a task folder that is a link, or lies outside it, is never read."""
    if src.is_symlink():
        return f"the task folder is a link (to {os.readlink(src)}): a task is imported from the collection itself"
    root = Path(os.path.realpath(src))
    if collection is not None and not root.is_relative_to(os.path.realpath(collection)):
        return f"the task folder resolves to {root}, outside the collection {collection}"
    for rel, full, st in walk_untrusted(src, max_entries=None, deadline_s=None):
        name = os.fsdecode(rel)
        if st is None:
            return ("the walk stopped" if rel == OVERFLOW else f"{name} could not be read as it is") + \
                   " (nested too deep, a path too long, or a folder that cannot be listed)"
        mode = st.st_mode
        if stat.S_ISLNK(mode):
            target = Path(os.fsdecode(os.path.realpath(full)))
            if target != root and not target.is_relative_to(root):
                return f"{name} is a link to {os.fsdecode(os.readlink(full))}, outside the task folder: never followed"
        elif not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            return f"{name} is not a regular file, folder or link ({_KINDS.get(stat.S_IFMT(mode), 'a special file')})"
    return None
