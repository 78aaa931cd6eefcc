"""What an image's build log says could not be reached.

A build step may fetch from a host this machine cannot reach and still succeed: ``curl URL | sh``
exits with the shell's 0 when curl fails, ``|| true`` hides a failure. The image is then built
without what that step installs, and a task's oracle fails for want of it: this machine's
network, not the task. The log keeps each step's output under a ``### WHERE: ...`` header
(``build.py``), so each such failure is named with the step that met it."""

from __future__ import annotations

import re
from pathlib import Path

#: what DNS and connection failures look like in the tools a build step uses (curl, wget, apt,
#: pip and Python's urllib, npm, go, git)
_UNREACHED = re.compile(
    r"Could not resolve host|Temporary failure in name resolution|Name or service not known|"
    r"unable to resolve host address|Could not resolve '|Network is unreachable|"
    r"Failed to establish a new connection|getaddrinfo (?:ENOTFOUND|EAI_AGAIN)|dial tcp: lookup|"
    r"Could not connect to|Failed to connect to", re.I)
_STEP = re.compile(r"^### (\S+): ")
#: at most this many lines named per image (one per step is enough to say what is missing)
_MAX = 5


def unreached(log: Path) -> list[str]:
    """``WHERE: line`` for the first failure to reach a host in each build step of ``log`` (none
    when the log is missing)."""
    try:
        text = log.read_text(errors="replace")
    except OSError:
        return []
    where, seen, out = "", set(), []
    for line in text.splitlines():
        if (m := _STEP.match(line)) is not None:
            where = m.group(1)
            continue
        if where and where not in seen and _UNREACHED.search(line):
            seen.add(where)
            out.append(f"{where}: {line.strip()[:200]}")
            if len(out) == _MAX:
                break
    return out
