"""Reaching the runner of a run directory: `assay ctl` and the viewer talk to it through here.

A running runner listens on a loopback TCP port and writes where, with a random token, to
``RUN_DIR/control.json`` (mode 0600, not evidence; removed when it ends). A request is one JSON
line ``{"token", "op", "who", ...}``; the answer is one JSON line, and for ``subscribe`` the
runner's event stream follows, one JSON line per event.
"""

from __future__ import annotations

import getpass
import json
import os
import socket
from pathlib import Path
from typing import Any, Iterator

from assay.errors import RunDirError

CONTROL_FILE = "control.json"
#: the largest line either side sends (a snapshot of a big run included)
MAX_LINE = 16 * 1024 * 1024


def who_am_i(via: str = "assay ctl") -> str:
    """Who made a change, as recorded: the user, the host and the tool."""
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = f"uid {os.getuid()}"
    return f"{user}@{socket.gethostname()} ({via}, pid {os.getpid()})"


def address(run_dir: Path | str) -> dict[str, Any] | None:
    """The running runner's address and token, or None when no runner is listening."""
    p = Path(run_dir) / CONTROL_FILE
    try:
        data = json.loads(p.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("port"), int) or not isinstance(data.get("token"), str):
        return None
    return data


def _connect(run_dir: Path | str, timeout_s: float) -> tuple[socket.socket, dict[str, Any]]:
    where = address(run_dir)
    if where is None:
        raise RunDirError(f"{run_dir}: no runner is running on this run (no {CONTROL_FILE}); "
                          f"a stopped run continues with `assay run --resume {run_dir}`")
    try:
        sock = socket.create_connection(("127.0.0.1", where["port"]), timeout=timeout_s)
    except OSError as e:
        raise RunDirError(f"{run_dir}: its runner (pid {where.get('pid')}) does not answer ({e.strerror or e}); "
                          f"if it died, `assay run --resume {run_dir}` continues the run") from None
    return sock, where


def _send(sock: socket.socket, where: dict[str, Any], op: str, who: str, args: dict[str, Any]) -> None:
    sock.sendall((json.dumps({"token": where["token"], "op": op, "who": who, **args}) + "\n").encode())


def request(run_dir: Path | str, op: str, *, who: str | None = None, timeout_s: float = 30.0,
            **args: Any) -> dict[str, Any]:
    """Send one control request and return the runner's answer (``ok`` False: refused, with ``error``)."""
    sock, where = _connect(run_dir, timeout_s)
    with sock, sock.makefile("rb") as f:
        _send(sock, where, op, who or who_am_i(), args)
        line = f.readline(MAX_LINE)
    if not line:
        raise RunDirError(f"{run_dir}: the runner closed the connection without an answer (it may be ending)")
    return json.loads(line)


def subscribe(run_dir: Path | str, *, who: str | None = None, timeout_s: float | None = None) -> Iterator[dict[str, Any]]:
    """The runner's state, then each event of its stream as it happens, until the run ends."""
    sock, where = _connect(run_dir, 30.0)
    sock.settimeout(timeout_s)
    with sock, sock.makefile("rb") as f:
        _send(sock, where, "subscribe", who or who_am_i(), {})
        while True:
            line = f.readline(MAX_LINE)
            if not line:
                return
            yield json.loads(line)
