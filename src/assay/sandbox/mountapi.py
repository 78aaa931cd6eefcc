"""Linux's mount calls assay needs and Python does not wrap: an idmapped, read-only clone of a
folder, an overlay mount, and unmounting (``open_tree``, ``mount_setattr``, ``move_mount``,
``mount``, ``umount2`` through libc's ``syscall``; x86-64 and arm64 share these numbers).

An idmapped mount shows a folder's files as owned by another uid without touching them: the
fixture a task ships stays one shared, unmodified tree, and each sandbox's host uid sees it as
its own (:mod:`assay.sandbox.overlay_ws`). Root only.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import threading
from pathlib import Path

from assay.untrusted.mounts import umount2

_libc = ctypes.CDLL(None, use_errno=True)
_SYS_OPEN_TREE, _SYS_MOVE_MOUNT, _SYS_MOUNT_SETATTR = 428, 429, 442
_OPEN_TREE_CLONE, _OPEN_TREE_CLOEXEC = 1, 0o2000000
_AT_FDCWD, _AT_EMPTY_PATH, _AT_RECURSIVE = -100, 0x1000, 0x8000
_MOVE_MOUNT_F_EMPTY_PATH = 4
_MOUNT_ATTR_RDONLY, _MOUNT_ATTR_IDMAP = 0x1, 0x00100000
_MNT_DETACH = 2


class _MountAttr(ctypes.Structure):
    _fields_ = [("attr_set", ctypes.c_uint64), ("attr_clr", ctypes.c_uint64),
                ("propagation", ctypes.c_uint64), ("userns_fd", ctypes.c_uint64)]


def _check(ret: int, what: str) -> int:
    if ret < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")
    return ret


#: tries of :func:`userns_fd` (its process is spawned; a try that still fails is retried, then named)
USERNS_TRIES = 3


def userns_fd(disk_uid: int, disk_gid: int, host_uid: int) -> int:
    """A user namespace mapping ``disk_uid``/``disk_gid`` to ``host_uid`` (one id each), as an fd:
    a child unshares, its maps are written, its namespace is opened, then it exits. A child that
    fails is tried again (each try a fresh child); the last failure says what the child saw."""
    for left in range(USERNS_TRIES - 1, -1, -1):
        try:
            return _userns_fd_once(disk_uid, disk_gid, host_uid)
        except OSError:
            if left == 0:
                raise
    raise AssertionError("unreachable")


#: the namespace's process: util-linux ``unshare`` (the sandbox already needs it) running a shell
#: that says it is inside, then waits for its stdin to close
_HOLDER = ("--user", "/bin/sh", "-c", "echo inside; read _")


def _userns_fd_once(disk_uid: int, disk_gid: int, host_uid: int) -> int:
    """Spawned, never forked by Python: a forked child runs every library's at-fork handlers, and
    grpc's (a Ray head holds channels) start threads there, where ``unshare(CLONE_NEWUSER)``
    fails with EINVAL: the whole suite on two workers hit that in 3 of 4 runs."""
    unshare = shutil.which("unshare") or "/usr/bin/unshare"
    p = subprocess.Popen([unshare, *_HOLDER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         close_fds=True)
    assert p.stdin is not None and p.stdout is not None and p.stderr is not None
    try:
        if p.stdout.readline() != b"inside\n":
            p.stdin.close()
            p.wait()
            why = p.stderr.read().decode(errors="replace").strip()[-500:] or f"it ended with {p.returncode}"
            raise OSError(f"could not make a user namespace for an idmapped mount: {why}")
        Path(f"/proc/{p.pid}/uid_map").write_text(f"{disk_uid} {host_uid} 1\n")
        Path(f"/proc/{p.pid}/setgroups").write_text("deny")
        Path(f"/proc/{p.pid}/gid_map").write_text(f"{disk_gid} {host_uid} 1\n")
        return os.open(f"/proc/{p.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        if not p.stdin.closed:
            p.stdin.close()
        p.wait()
        p.stdout.close()
        p.stderr.close()


_SHARED: dict[tuple[int, int, int, int], int] = {}  # (pid, ids) -> the namespace's fd, kept open
_SHARED_LOCK = threading.Lock()


def shared_userns_fd(disk_uid: int, disk_gid: int, host_uid: int) -> int:
    """:func:`userns_fd`, made once per process and mapping (a fork per attempt was the
    overlay's largest cost): the namespace holds nothing but the mapping, and an idmapped mount
    takes its own reference, so one fd serves every attempt. Never close it; a forked child
    (its pid differs) makes its own."""
    key = (os.getpid(), disk_uid, disk_gid, host_uid)
    with _SHARED_LOCK:
        fd = _SHARED.get(key)
        if fd is None:
            fd = _SHARED[key] = userns_fd(disk_uid, disk_gid, host_uid)
        return fd


def idmapped_clone(src: Path, dst: Path, *, disk_uid: int, disk_gid: int, host_uid: int) -> None:
    """Attach at ``dst`` a read-only clone of ``src`` whose ``disk_uid`` files show as ``host_uid``'s."""
    ns = shared_userns_fd(disk_uid, disk_gid, host_uid)
    fd = -1
    try:
        fd = _check(_libc.syscall(_SYS_OPEN_TREE, _AT_FDCWD, os.fsencode(src),
                                  _OPEN_TREE_CLONE | _OPEN_TREE_CLOEXEC | _AT_RECURSIVE), "open_tree")
        attr = _MountAttr(_MOUNT_ATTR_IDMAP | _MOUNT_ATTR_RDONLY, 0, 0, ns)
        _check(_libc.syscall(_SYS_MOUNT_SETATTR, fd, b"", _AT_EMPTY_PATH | _AT_RECURSIVE, ctypes.byref(attr),
                             ctypes.sizeof(attr)), "mount_setattr")
        _check(_libc.syscall(_SYS_MOVE_MOUNT, fd, b"", _AT_FDCWD, os.fsencode(dst), _MOVE_MOUNT_F_EMPTY_PATH),
               "move_mount")
    finally:
        if fd >= 0:
            os.close(fd)


def _plain(p: Path) -> bytes:
    """A path fit for overlay's option string (its separators would split it)."""
    b = os.fsencode(p)
    if any(c in b for c in b",:\\="):
        raise OSError(f"{p}: a path with , : \\ or = cannot name an overlay layer")
    return b


def mount_overlay(lower: Path | list[Path], upper: Path, work: Path, target: Path) -> None:
    """Overlayfs at ``target``: ``lower`` read-only under ``upper``. Renaming a lower folder works
    (``redirect_dir=on``: the kernel records it in a ``trusted.`` xattr an agent cannot set, and
    only the kernel reads it back); no metacopy, so the upper holds whole files."""
    lowers = b":".join(_plain(p) for p in (lower if isinstance(lower, list) else [lower]))  # topmost first
    opts = (b"lowerdir=" + lowers + b",upperdir=" + _plain(upper) + b",workdir=" + _plain(work)
            + b",redirect_dir=on,metacopy=off,index=off,xino=off")
    _check(_libc.mount(b"overlay", os.fsencode(target), b"overlay", 0, opts), "mount overlay")


def umount(target: Path, *, detach: bool = False) -> None:
    umount2(os.fsencode(target), _MNT_DETACH if detach else 0)


__all__ = ["idmapped_clone", "mount_overlay", "shared_userns_fd", "umount", "userns_fd"]
