"""Host-side chores of a bubblewrap sandbox: handing its writable tree to the sandbox's uid,
and reading what bwrap said on its info pipe."""

from __future__ import annotations

import os
from pathlib import Path


def own_tree(path: Path, uid: int) -> None:
    """chown a tree without following links (the sandbox's identity must be able to write it)."""
    os.lchown(path, uid, uid)
    if path.is_symlink() or not path.is_dir():
        return
    for dirpath, dirnames, filenames in os.walk(path, followlinks=False):
        for name in dirnames + filenames:
            try:
                os.lchown(os.path.join(dirpath, name), uid, uid)
            except FileNotFoundError:
                pass


def read_available(fd: int) -> bytes:
    """What bwrap wrote to its info pipe (it writes before the command starts); never blocks."""
    chunks = []
    os.set_blocking(fd, False)
    try:
        while True:
            try:
                b = os.read(fd, 65536)
            except BlockingIOError:
                break
            if not b:
                break
            chunks.append(b)
    finally:
        os.close(fd)
    return b"".join(chunks)
