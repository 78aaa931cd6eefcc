"""Sandboxes' empty shells made ahead: a fresh control group with two parked launchers in it
(the sandbox's ``bwrap`` and its first exec).

What a bwrap sandbox needs before its namespaces exist, and what is slow to make on the
critical path under cgroup v1 (see :mod:`assay.sandbox.bwrap.launch`), is prepared in a background
thread while other sandboxes run: a new empty control group (given the last sandbox's
limits), an unnamed error file, a parked launcher that will become the sandbox's ``bwrap``
and :data:`LAUNCHERS` that will become its first execs, each joining the group before it
reads anything (the compiled launcher joins by itself, so the kernel's wait blocks it, not
this thread). A sandbox takes one (:func:`take`), sets its limits on the group if they differ
and releases the launchers; every sandbox still gets fresh namespaces, a fresh group, a fresh
workspace and its own identity — nothing of a sandbox is ever reused. The number kept ready
follows the number of sandboxes alive at once (at most :data:`MAX_READY`). Unused ones are
ended at exit. The same thread removes an ended sandbox's group (and its endpoints' socket
directory, if it had one) (:func:`dispose`), after its processes are all gone, so that is off
the caller's path too."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections import deque
from dataclasses import dataclass
from collections.abc import Callable
from pathlib import Path

from assay.sandbox import nsproc
from assay.sandbox.bwrap import cgroup
from assay.sandbox.bwrap.launch import Parked

MAX_READY = 8
#: what the manifest and every result record about it (the backend's facts)
PREPARED_AHEAD = ("a new empty control group and parked launchers (assay-launch, or /bin/sh, started by vfork; "
                  "each joins that group before it reads its request) made before the sandbox is asked for; "
                  "namespaces, workspace and identity are fresh per sandbox, nothing is reused")
#: exec launchers parked with each sandbox: most run one command (a trivial trial's agent, a
#: verifier's one predicate), so a second one would mostly be started and ended unused; a
#: sandbox of several execs parks the next while one runs (:class:`assay.sandbox.bwrap.launch.Ahead`)
LAUNCHERS = 1


@dataclass
class Prepared:
    """One sandbox's parts made ahead: state dir, group, info pipe, parked holder and exec."""

    owner: int  # the harness pid that made it (a forked child never takes its parent's)
    layout: cgroup.Layout | None
    err: int  # an unnamed file bwrap and its holder write their errors to (nothing to remove)
    group: cgroup.SandboxGroup | None
    info_r: int
    info_w: int
    holder: Parked
    launchers: tuple[Parked, ...]
    #: the (memory bytes, processes) already set on the group: the last sandbox's, most often
    #: the next one's too (a run's trials share their task's limits); None: none set
    limits: cgroup.Want | None = None

    def procs_files(self) -> list[Path]:
        return procs_files(self.group)

    def discard(self) -> None:
        """End the parked launchers, close the pipe, remove group and state (never used)."""
        for p in (self.holder, *self.launchers):
            p.discard()
        for fd in (self.info_r, self.info_w, self.err):
            try:
                os.close(fd)
            except OSError:
                pass
        if self.group is not None:
            self.group.remove()


def procs_files(group: cgroup.SandboxGroup | None) -> list[Path]:
    """The group's ``cgroup.procs`` files (one per hierarchy; none without a group)."""
    return [d / "cgroup.procs" for d in group.dirs.values()] if group is not None else []


def error_file() -> int:
    """An unnamed, unlinked file for a sandbox's bwrap and holder to write errors to: one
    ``open``, and nothing to remove (the kernel frees it with its last descriptor)."""
    try:
        return os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR | os.O_CLOEXEC, 0o600)
    except OSError:  # a file system without O_TMPFILE
        fd, name = tempfile.mkstemp(prefix="assay-bwrap-err-")
        os.unlink(name)
        return fd


def prepare(lay: cgroup.Layout | None, limits: cgroup.Want | None = None) -> Prepared:
    """Make one sandbox's parts now, with ``limits`` (memory bytes, processes) already set on
    the group if given. The launchers join the group themselves (the compiled one: the
    harness does not wait for cgroup v1's grace period)."""
    group = None
    made: list[Parked] = []
    info_r, info_w = os.pipe()
    err = error_file()
    try:
        if lay is not None:
            try:
                group = cgroup.SandboxGroup.make(lay, "sandbox")
            except OSError:
                group = None
        if group is not None and limits is not None:
            try:
                group.set_limits(*limits)
            except OSError:
                limits = None  # the sandbox sets its own, and learns the kernel refuses them
        files = procs_files(group)
        made.append(Parked(stderr=err, keep_fds=(info_w,), group=files, oom_shield=True))
        made += [Parked(group=files) for _ in range(LAUNCHERS)]
        return Prepared(os.getpid(), lay if group is not None else None, err, group, info_r, info_w,
                        made[0], tuple(made[1:]), limits if group is not None else None)
    except BaseException:
        for p in made:
            p.discard()
        for fd in (info_r, info_w, err):
            os.close(fd)
        if group is not None:
            group.remove()
        raise


class _Pool:
    def __init__(self) -> None:
        self.ready: deque[Prepared] = deque()
        self.target = 1
        self.limits: cgroup.Want | None = None  # the last sandbox's, set ahead
        self.lock = threading.Lock()
        self.wake = threading.Event()
        self.thread: threading.Thread | None = None
        self.closed = False
        self.trash: deque[Callable[[], None]] = deque()
        self.idle = threading.Condition(self.lock)

    def take(self, lay: cgroup.Layout | None, alive: int,
             limits: cgroup.Want | None = None) -> Prepared | None:
        """A prepared entry for ``lay`` if one is ready (and the refill is nudged, its group
        given ``limits``, this sandbox's)."""
        stale: list[Prepared] = []
        got = None
        with self.lock:
            self.target = min(MAX_READY, max(self.target, alive))
            self.limits = limits
            while self.ready and got is None:
                e = self.ready.popleft()
                if e.owner == os.getpid() and e.layout == lay and all(p.alive() for p in (e.holder, *e.launchers)):
                    got = e
                elif e.owner == os.getpid():
                    stale.append(e)
            self._ensure_thread()
        for e in stale:
            e.discard()
        self.wake.set()
        return got

    def _ensure_thread(self) -> None:
        if self.thread is None and not self.closed:
            self.thread = threading.Thread(target=self._run, name="assay-sandbox-pool", daemon=True)
            self.thread.start()

    def dispose(self, chore: Callable[[], None]) -> None:
        """Run ``chore`` (removing an ended sandbox's group and state) off the caller's path."""
        with self.lock:
            if self.closed:
                run_now = True
            else:
                run_now = False
                self.trash.append(chore)
                self._ensure_thread()
        if run_now:
            chore()
        self.wake.set()

    def flush(self) -> None:
        """Wait until every chore handed to :meth:`dispose` so far is done."""
        with self.lock:
            while self.trash and self.thread is not None and self.thread.is_alive():
                self.idle.wait(timeout=1.0)

    def _chores(self) -> None:
        while True:
            with self.lock:
                if not self.trash:
                    self.idle.notify_all()
                    return
                chore = self.trash[0]
            try:
                chore()
            except OSError:
                pass
            with self.lock:
                self.trash.popleft()

    def _run(self) -> None:
        while not self.closed:
            self.wake.wait()
            self.wake.clear()
            self._chores()
            while not self.closed:
                self._chores()
                with self.lock:
                    if len(self.ready) >= self.target:
                        break
                try:
                    e = prepare(cgroup.layout(), self.limits)
                except OSError:
                    break  # tried again at the next take
                with self.lock:
                    if self.closed:
                        stale = e
                    else:
                        self.ready.append(e)
                        stale = None
                if stale is not None:
                    stale.discard()

    def close(self) -> None:
        with self.lock:
            self.closed = True
            entries, self.ready = list(self.ready), deque()
        self.wake.set()
        if self.thread is not None:
            self.thread.join(timeout=10)
        self._chores()
        for e in entries:
            if e.owner == os.getpid():
                e.discard()


_pool = _Pool()
atexit.register(_pool.close)


def take(lay: cgroup.Layout | None, alive: int,
         limits: cgroup.Want | None = None) -> Prepared | None:
    """A ready entry (or None: the caller prepares one); ``alive`` sandboxes exist now;
    ``limits`` (this sandbox's) are set ahead on the groups of the next entries made."""
    return _pool.take(lay, alive, limits)


def dispose(chore: Callable[[], None]) -> None:
    """Have the pool's thread run ``chore`` (an ended sandbox's group and state removal: rmdir
    of a memory cgroup takes milliseconds) instead of the caller."""
    _pool.dispose(chore)


def flush() -> None:
    """Wait until the chores handed to :func:`dispose` so far are done."""
    _pool.flush()


def close() -> None:
    """End every unused prepared entry and finish the chores now (otherwise done at exit)."""
    _pool.close()


def remove_parts(group: cgroup.SandboxGroup | None, state: Path | None, tries: int = 20) -> None:
    """An ended sandbox's group and state directory (if it had one: its endpoints' sockets),
    removed (a :func:`dispose` chore); a straggler still exiting is killed and waited for by pidfd."""
    if group is not None:
        for _ in range(tries):
            if group.remove():
                break
            nsproc.wait_gone(nsproc.kill_all(group.pids()), timeout_s=0.5)
    if state is not None:
        shutil.rmtree(state, ignore_errors=True)
