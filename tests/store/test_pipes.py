"""The pipes that carry a scan's big frames (a batch of trials to the folding process, a reading
process's folders, the log's index) hold a whole batch, so the writer does not wait on each
64 KiB slice the reader takes (at 10^6 trials a score took about a second less)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from assay.score.fold_child import FoldChild
from assay.store import log_child
from assay.store.log_child import PendingIndex
from assay.store.scan import LOAD_FILES
from assay.store.scan_workers import Worker, widen_pipe
from tests.score.test_fold_child import log_run

WIDE = min(1 << 20, int(Path("/proc/sys/fs/pipe-max-size").read_text()))


def size(fd: int) -> int:
    return fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)


def test_a_pipe_is_widened_to_what_the_system_allows() -> None:
    r, w = os.pipe()
    try:
        assert size(w) < WIDE  # the kernel's default, so the widening below is seen
        widen_pipe(w)
        assert size(r) == size(w) == WIDE
    finally:
        os.close(r)
        os.close(w)


REAL_FCNTL = fcntl.fcntl


def _system_allowing(monkeypatch: pytest.MonkeyPatch, allowed: int) -> None:
    """The kernel as an unprivileged process meets it where /proc/sys/fs/pipe-max-size is ``allowed``
    (root here is never refused): EPERM for a pipe size above it."""
    from assay.store import scan_workers

    def kernel(fd: int, cmd: int, arg: int = 0) -> int:
        if cmd == fcntl.F_SETPIPE_SZ and arg > allowed:
            raise PermissionError(1, "Operation not permitted")
        return REAL_FCNTL(fd, cmd, arg)

    monkeypatch.setattr(scan_workers.fcntl, "fcntl", kernel)
    monkeypatch.setattr(scan_workers, "_pipe_max", lambda: allowed)


def test_where_1_mib_is_refused_the_pipe_takes_what_the_system_allows(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refused above 256 KiB, the pipe takes the allowed 256 KiB, not the default."""
    _system_allowing(monkeypatch, 256 << 10)
    r, w = os.pipe()
    try:
        widen_pipe(w)
        assert REAL_FCNTL(r, fcntl.F_GETPIPE_SZ) == 256 << 10
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("allowed", [0, 16 << 10])
def test_a_pipe_is_never_narrowed(monkeypatch: pytest.MonkeyPatch, allowed: int) -> None:
    """1 MiB refused and the allowed maximum unreadable (0) or under the default: the default stays
    (a size of 0 would have been rounded up to one page by the kernel)."""
    r, w = os.pipe()
    try:
        default = REAL_FCNTL(w, fcntl.F_GETPIPE_SZ)
        _system_allowing(monkeypatch, allowed)
        widen_pipe(w)
        monkeypatch.undo()
        assert REAL_FCNTL(w, fcntl.F_GETPIPE_SZ) == default
    finally:
        os.close(r)
        os.close(w)


def test_widening_what_is_no_pipe_is_no_error(tmp_path: Path) -> None:
    with open(tmp_path / "f", "wb") as f:
        widen_pipe(f.fileno())  # EBADF/EINVAL: the default stays, nothing fails


def test_the_folding_process_and_a_reading_process_get_wide_pipes(tmp_path: Path) -> None:
    run = log_run(tmp_path, 20)
    child = FoldChild(run, tmp_path / "side.jsonl", set(), {"code": 1.0}, {})
    try:
        assert child.proc.stdin is not None and size(child.proc.stdin.fileno()) == WIDE
    finally:
        child.abort()
    worker = Worker(str(run), True, LOAD_FILES)
    try:
        assert worker.proc.stdout is not None and size(worker.proc.stdout.fileno()) == WIDE
    finally:
        worker.close()


def test_the_log_index_comes_through_a_wide_pipe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 caplog: pytest.LogCaptureFixture) -> None:
    run = log_run(tmp_path, 20)
    monkeypatch.setattr(log_child, "CHILD_FROM", 0)  # this small log indexed by a process of its own too
    pending = PendingIndex(run)
    assert pending.proc is not None and pending.proc.stdout is not None
    assert size(pending.proc.stdout.fileno()) == WIDE
    assert len(pending.result()) == 20 + 2  # its lines (20 trials, 2 of them retried), through that pipe
    assert "doing it here" not in caplog.text  # not indexed again here after the child failed
