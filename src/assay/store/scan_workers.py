"""Processes that read trial folders for a scan: ``python -m assay.store.scan_workers``, one per
core, each fed requests (a chunk of trial ids) on its standard input and answering, in order, on
its standard output.

Plain processes over pipes, not :mod:`multiprocessing`: its ``spawn`` runs the caller's main
module again in every worker (a script without a ``__main__`` guard would run twice, one read from
standard input cannot start at all), and ``fork`` copies whatever threads the caller holds. Here a
worker imports :mod:`assay.store.scan_read` and the one function it is named, nothing of the
caller. A worker that dies is seen as the end of its output; the caller reads what it had not
answered itself. The frames are pickles between this process and its own children, never read
from anywhere else.
"""

from __future__ import annotations

import fcntl
import importlib
import logging
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path
from typing import IO, Any, Callable, Iterator

#: the environment variable that sets the number of reading processes (0 or 1: read in the scan's own)
WORKERS_ENV = "ASSAY_SCAN_WORKERS"
#: below this many trials a scan reads in its own process (a worker process costs ~0.2 s to start)
PROCESSES_FROM = 4096
_LEN = struct.Struct("!Q")
_log = logging.getLogger(__name__)


def usable_cores() -> int:
    """The cores this process may run on (its affinity where the system says it)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def workers_wanted(n_trials: int, workers: int | None) -> int:
    """Reading processes for a scan of ``n_trials`` (0: read in this process). ``workers`` None: the
    environment's ``ASSAY_SCAN_WORKERS``, else one per usable core for a large run on two or more."""
    if workers is None:
        from assay.spec.env_settings import env_number  # the scanning process's; a reading process imports no more

        env = env_number(WORKERS_ENV, None, whole=True, minimum=0)  # 0: read a run directory in one process
        if env is not None:
            workers = int(env)
        else:
            cores = usable_cores()
            workers = cores if n_trials >= PROCESSES_FROM and cores >= 2 else 0
    return workers if workers > 1 else 0


def child_env() -> dict[str, str]:
    """The environment of a reading process: this one's, with the folder this assay was imported
    from on PYTHONPATH when it is a checkout the caller put on sys.path itself, so the child finds
    the same assay (never a site-packages folder ahead of the standard library, where an old
    backport could shadow it)."""
    env = dict(os.environ)
    root_of_assay = Path(__file__).resolve().parents[2]
    if root_of_assay.name not in ("site-packages", "dist-packages"):
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root_of_assay), env.get("PYTHONPATH")) if p)
    return env


def resolve(name: str) -> Callable[..., Any]:
    """The function ``module:function`` names."""
    module, _, attr = name.partition(":")
    return getattr(importlib.import_module(module), attr)


def widen_pipe(fd: int) -> None:
    """Let a pipe hold a whole frame of a batch (the kernel's 64 KiB otherwise make the writer wait
    on each slice the reader takes): 1 MiB, or as much as the system allows an unprivileged process
    (``/proc/sys/fs/pipe-max-size``); the default stays where neither is allowed."""
    try:
        now = fcntl.fcntl(fd, fcntl.F_GETPIPE_SZ)
    except OSError:
        return  # no pipe
    for size in (1 << 20, min(_pipe_max(), 1 << 20)):
        if size <= now:
            return  # never narrower than it is (an unreadable maximum reads as 0)
        try:
            fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, size)
            return
        except OSError:
            continue


def _pipe_max() -> int:
    try:
        with open("/proc/sys/fs/pipe-max-size") as f:
            return int(f.read())
    except (OSError, ValueError):
        return 0


def send_frame(out: IO[bytes], obj: object) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LEN.pack(len(data)) + data)
    out.flush()


def receive_frame(inp: IO[bytes]) -> Any:
    """The next frame, or EOFError when the other side has ended."""
    head = inp.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError
    n = _LEN.unpack(head)[0]
    data = inp.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)


class Worker:
    """One reading process and the requests it has not answered yet (answered in the order sent)."""

    def __init__(self, root: str, every: bool, load: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "assay.store.scan_workers", root, "1" if every else "0",
                                      load], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=child_env())
        assert self.proc.stdout is not None
        widen_pipe(self.proc.stdout.fileno())  # its answers are whole folders' bytes

    def ask(self, items: list[tuple[str, bool]]) -> None:
        """Send a request; to a worker that has died already this is no error here: its answer is
        then the end of its output, which :func:`read_in_processes` reads as the worker lost."""
        assert self.proc.stdin is not None
        try:
            send_frame(self.proc.stdin, items)
        except OSError:
            pass  # a broken pipe: the worker has ended

    def answer(self) -> Any:
        """The answer to the oldest request (EOFError: the worker ended without it)."""
        assert self.proc.stdout is not None
        return receive_frame(self.proc.stdout)

    def ended(self) -> int | None:
        """The exit code of a worker whose output ended (None: still running after a few seconds)."""
        try:
            return self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            return None

    def close(self) -> None:
        """End the worker: its input closed, it exits; one that does not is killed (it is ours)."""
        try:
            if self.proc.stdin is not None:
                self.proc.stdin.close()
        except OSError:
            pass  # a worker that died leaves a broken pipe
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()


def read_in_processes(root: str, todo: Iterator[Any], every: bool, workers: int, load: str, chunk: int,
                      ahead_per_worker: int) -> Iterator[Any]:
    """Loaded trials (or None where the item is None: no folder) of ``todo``'s items in order, read
    by ``workers`` processes, chunk ``k`` by worker ``k % workers``. Returns early when a worker
    ended without answering: the chunks then in flight are read here, the rest stays in ``todo``."""
    pool: list[Worker] = []
    try:
        for _ in range(workers):
            pool.append(Worker(root, every, load))
    except OSError as e:  # no interpreter to start (an embedded Python, a venv removed since)
        _log.warning("no worker process could start to read %s (%s: %s); reading in this process", root,
                     sys.executable, e)
        for w in pool:
            w.close()
        return
    ahead: deque[tuple[list[Any], Worker | None]] = deque()
    sent = 0

    def top_up() -> None:
        nonlocal sent
        while len(ahead) < workers * ahead_per_worker:
            batch = [item for _i, item in zip(range(chunk), todo)]
            if not batch:
                return
            wanted = [item for item in batch if item is not None]
            worker = pool[sent % workers] if wanted else None
            if worker is not None:
                worker.ask(wanted)
                sent += 1
            ahead.append((batch, worker))

    try:
        top_up()
        while ahead:
            batch, worker = ahead[0]
            try:
                got = worker.answer() if worker is not None else []
            except (EOFError, OSError, pickle.UnpicklingError) as e:
                code = worker.ended() if worker is not None else None
                _log.warning("a worker process reading %s stopped (exit %s, %s); reading the rest in this process",
                             root, code, type(e).__name__)
                local = resolve(load)
                for left, _w in ahead:
                    yield from _in_place(left, local(root, [item for item in left if item is not None], every))
                ahead.clear()
                return
            ahead.popleft()
            top_up()
            yield from _in_place(batch, got)
    finally:
        for w in pool:
            w.close()


def _in_place(batch: list[Any], loaded: list[Any]) -> Iterator[Any]:
    """``loaded`` (one per item that is not None) spread over ``batch``'s places, None kept."""
    it = iter(loaded)
    for item in batch:
        yield None if item is None else next(it)


def _serve(root: str, every: bool, load: Callable[..., Any]) -> None:
    """The worker's loop: requests are taken off standard input by a thread as they come (so the
    caller never blocks writing one while this process writes an answer), answered in order."""
    inbox: queue.Queue[Any] = queue.Queue()

    def take() -> None:
        try:
            while True:
                inbox.put(receive_frame(sys.stdin.buffer))
        except (EOFError, OSError):
            inbox.put(None)

    threading.Thread(target=take, daemon=True).start()
    out = os.fdopen(os.dup(1), "wb")  # the frames' own descriptor: anything else printed goes to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while (items := inbox.get()) is not None:
        send_frame(out, load(root, items, every))


if __name__ == "__main__":
    _serve(sys.argv[1], sys.argv[2] == "1", resolve(sys.argv[3]))
