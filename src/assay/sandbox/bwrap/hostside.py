"""Host-side chores of a bubblewrap sandbox: handing its writable tree to the sandbox's uid,
and reading what bwrap and its holder said on their pipes and error file."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from assay.sandbox import overlay_ws
from assay.sandbox.base import SandboxSpec
from assay.untrusted.tree import walk_untrusted


def hand_over(spec: SandboxSpec, uid: int) -> None:
    """The sandbox's workspace and writable mounts handed to its host ``uid`` (blocking: remounts
    and chowns, run off the event loop)."""
    if not overlay_ws.own(spec.workspace, uid):  # an overlay hands over its upper only
        own_tree(spec.workspace, uid)
    for m in spec.mounts:
        if m.writable and m.source.exists():
            own_tree(m.source, uid)


def own_tree(path: Path, uid: int) -> None:
    """chown a tree without following links (the sandbox's identity must be able to write it).

    The tree may be one an agent wrote (a sandbox rebuilt over its workspace, a later turn), so
    it is walked without recursion; what the walk cannot take (deeper than the disk watcher
    measures) is left as it is."""
    os.lchown(path, uid, uid)
    if path.is_symlink() or not path.is_dir():
        return
    for _, full, st in walk_untrusted(path, max_entries=None, deadline_s=None):
        if st is not None:
            try:
                os.lchown(full, uid, uid)
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


async def read_line(fd: int, timeout_s: float) -> bytes:
    """One line from a pipe (b"" at EOF or timeout) without blocking the event loop; bytes past
    the newline are not expected (the holder echoes one line and nothing else)."""
    loop = asyncio.get_running_loop()
    got = bytearray()
    done: asyncio.Future[None] = loop.create_future()

    def readable() -> None:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return
        except OSError:
            chunk = b""
        got.extend(chunk)
        if (not chunk or b"\n" in got) and not done.done():
            done.set_result(None)
    os.set_blocking(fd, False)
    loop.add_reader(fd, readable)
    try:
        await asyncio.wait_for(done, timeout=timeout_s)
    except asyncio.TimeoutError:
        return b""
    finally:
        loop.remove_reader(fd)
    return bytes(got).split(b"\n", 1)[0] + b"\n" if b"\n" in got else bytes(got)


def tail(fd: int, limit: int) -> str:
    """The last ``limit`` characters written to the file behind ``fd`` (bwrap's and the
    holder's errors, for the message of a sandbox that did not start)."""
    try:
        size = os.fstat(fd).st_size
        data = os.pread(fd, limit * 4, max(0, size - limit * 4))
    except OSError:
        return ""
    return data.decode(errors="replace")[-limit:]
