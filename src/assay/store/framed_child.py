"""A process of this one's own fed batches of items as pickled frames on its standard input: what
a large score hands its fold to (score/fold_child.py) and a large export its rows
(report/export_child.py). The frames are pickles between this process and its own child, never
read from anywhere else. A child that fails raises, naming its exit code; one let go is killed."""

from __future__ import annotations

import subprocess
from typing import IO, Any, NoReturn

from assay.store.scan_workers import child_env, receive_frame, send_frame, widen_pipe


class FramedChild:
    """This process's side: a first frame, then items gathered into frames of :attr:`BATCH`, then
    the end of input (``None``); with ``answers``, one frame read back at the end."""

    #: items sent in one frame (a batch of trials is about half a MiB)
    BATCH = 512
    #: what a failure says (``{code}``: the child's exit code)
    failure = "the child process ended with exit code {code} (its error is above)"

    def __init__(self, argv: list[str], first: object, *, answers: bool = False) -> None:
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE if answers else None,
                                     env=child_env())
        assert self.proc.stdin is not None
        widen_pipe(self.proc.stdin.fileno())
        self._items: list[Any] = []
        self.send(first)

    def send(self, obj: object) -> None:
        assert self.proc.stdin is not None
        try:
            send_frame(self.proc.stdin, obj)
        except (BrokenPipeError, OSError):
            self.failed()

    def add(self, item: Any) -> None:
        self._items.append(item)
        if len(self._items) >= self.BATCH:
            self.send(self._items)
            self._items = []

    def finish(self) -> Any:
        """The rest sent, the input ended; the child's answer (None without ``answers``) once it
        ended well, else raises."""
        if self._items:
            self.send(self._items)
            self._items = []
        self.send(None)
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        got, out = None, self.proc.stdout
        if out is not None:
            try:
                got = receive_frame(out)
            except EOFError:
                got = None
            out.close()
        if self.proc.wait() != 0 or (out is not None and got is None):
            self.failed()
        return got

    def failed(self) -> NoReturn:
        self.abort()
        raise RuntimeError(self.failure.format(code=self.proc.returncode))

    def abort(self) -> None:
        """Stop the child (a scan that failed, was refused, or ended)."""
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        pipes: tuple[IO[bytes] | None, ...] = (self.proc.stdin, self.proc.stdout)
        for f in pipes:
            if f is not None and not f.closed:
                try:
                    f.close()
                except OSError:
                    pass


__all__ = ["FramedChild"]
