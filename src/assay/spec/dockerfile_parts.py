"""The parts a Dockerfile is read into (an instruction, a build step) and the errors that name
what cannot be honoured: shared by the reader (``environment_dockerfile.py``) and the helpers
that read one kind of line (``dockerfile_copy.py``, ``dockerfile_run_flags.py``,
``dockerfile_stages.py``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_VAR = re.compile(r"\$(?:\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))")


class DockerfileError(ValueError):
    """A Dockerfile line assay cannot honour; ``line`` is 1-based."""

    def __init__(self, path: Path, line: int, message: str, fix: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line, self.message, self.fix = path, line, message, fix


@dataclass(frozen=True)
class Instruction:
    """One instruction: its keyword, what followed it (continuations joined) and its first line."""

    keyword: str
    args: str
    line: int
    heredoc: str | None = None


@dataclass(frozen=True)
class Mount:
    """One ``--mount`` of a RUN step: ``kind`` cache, tmpfs or bind; ``source`` a path of the build
    context (bind only, ``.`` its root); ``rw`` a bind whose writes are discarded."""

    kind: str
    target: str
    source: str = ""
    rw: bool = False


@dataclass(frozen=True)
class Step:
    """What the builder does for one instruction (``kind``: run, copy, workdir, env, user)."""

    kind: str
    line: int
    argv: tuple[str, ...] = ()  # run: exec form or ("/bin/sh", "-c", script)
    sources: tuple[str, ...] = ()  # copy: relative to the context
    dest: str = ""
    env: tuple[tuple[str, str], ...] = ()  # env: the variables set; run: the ARGs in scope
    deviation: str = ""  # what this step does other than the line says (recorded with the image)
    network: bool = True  # run: False for ``RUN --network=none`` (a loopback only)
    mounts: tuple[Mount, ...] = ()  # run: BuildKit's ``--mount=`` cache, tmpfs and bind mounts
    from_stage: int | None = None  # copy: ``COPY --from=STAGE`` (its index); sources are paths in it


class LineError(ValueError):
    """A line assay cannot honour, found before the reader knows its file and line: what, and the fix."""

    def __init__(self, message: str, fix: str):
        super().__init__(message)
        self.message, self.fix = message, fix


def substitute(value: str, scope: dict[str, str]) -> str:
    """``$NAME``, ``${NAME}`` and ``${NAME:-default}`` from ``scope`` (unknown names: empty)."""
    return _VAR.sub(lambda m: scope.get(m.group(1) or m.group(3), m.group(2) or ""), value)
