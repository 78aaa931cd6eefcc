"""What a task declares about the place it runs in: the folder the agent works in (``workdir``),
environment variables per role (``env``), folders the workspace starts with (``empty_dirs``),
and the interpreter a task script names on its first line (its shebang).

The same fields hold over today's host root and over a task's own image: a path a hidden test
names (``/app/out.txt``) is the path the agent wrote it at.
"""

from __future__ import annotations

import os
import posixpath
import stat
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_WORKDIR = "/workspace"
#: trees the system or the harness owns: a workdir there (or under them) would hide them or be hidden
RESERVED_TREES = ("/proc", "/dev", "/sys", "/tmp", "/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
                  "/etc", "/boot", "/assay", "/verifier", "/.assay")
#: folders a workdir may sit under but never be (the whole of them would be replaced)
RESERVED_EXACT = ("/", "/var", "/run")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
ROLES = ("agent", "verifier", "solution")


def check_workdir(value: str) -> str:
    """An absolute, normalised folder outside the system's and the harness's own."""
    if not value.startswith("/"):
        raise ValueError(f"workdir {value!r} must be an absolute path such as /app or /workspace")
    norm = posixpath.normpath(value)
    if norm.startswith("//"):
        norm = "/" + norm.lstrip("/")
    if norm != (value.rstrip("/") or "/") or "\0" in value:
        raise ValueError(f"workdir {value!r} must be normalised (no '.', '..' or doubled '/'): write {norm!r}")
    for r in (*RESERVED_EXACT, *RESERVED_TREES):
        if norm == r or (r in RESERVED_TREES and norm.startswith(r + "/")):
            raise ValueError(f"workdir {value!r} is {'under ' if norm != r else ''}{r}, which the system or the "
                             "harness owns; use a folder such as /app, /workspace or /home/user")
    return norm


def check_env(env: dict[str, str], where: str) -> dict[str, str]:
    for k, v in env.items():
        if not _NAME_RE.match(k):
            raise ValueError(f"{where}: {k!r} is not an environment variable name (letters, digits, '_')")
        if k.startswith("ASSAY_"):
            raise ValueError(f"{where}: {k!r}: names starting with ASSAY_ are the harness's own")
        if "\0" in v:
            raise ValueError(f"{where}: the value of {k!r} holds a NUL byte")
    return env


class TaskEnv(BaseModel):
    """Environment variables for each role. ``env: {NAME: value}`` (flat) gives every role the
    same; ``env: {agent: {...}, verifier: {...}, solution: {...}}`` gives each its own (the
    solution also gets the agent's: it stands in for an agent). A variant's ``env:`` is added to the
    agent's."""

    model_config = ConfigDict(allow_inf_nan=False, extra="forbid", frozen=True)

    agent: dict[str, str] = Field(default_factory=dict, description="For the agent's processes (and setup.sh).")
    verifier: dict[str, str] = Field(default_factory=dict, description="For every code-executing predicate.")
    solution: dict[str, str] = Field(default_factory=dict, description="For the reference solution (oracle), "
                                     "over the agent's.")

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, data: Any) -> Any:
        if not isinstance(data, dict) or not data:
            return data
        nested = [k for k, v in data.items() if isinstance(v, dict)]
        if not nested:  # the flat form: one set for every role
            flat = {k: v if isinstance(v, str) else _scalar(k, v) for k, v in data.items()}
            return {r: flat for r in ROLES}
        if len(nested) != len(data):
            raise ValueError("env: mixes variables and roles; write either NAME: value pairs (every role) or "
                             "agent:/verifier:/solution: mappings")
        return {k: {n: v if isinstance(v, str) else _scalar(f"{k}.{n}", v) for n, v in sub.items()}
                for k, sub in data.items()}

    @field_validator("agent", "verifier", "solution")
    @classmethod
    def _names(cls, v: dict[str, str], info: Any) -> dict[str, str]:
        return check_env(v, f"env.{info.field_name}")

    def for_solution(self) -> dict[str, str]:
        return {**self.agent, **self.solution}


def _scalar(name: str, v: Any) -> str:
    if isinstance(v, bool):
        return "1" if v else "0"
    if isinstance(v, (int, float)):
        return str(v)
    raise ValueError(f"env {name!r}: a value must be a string or a number, not {type(v).__name__}")


def check_empty_dir(rel: str) -> str:
    """A folder relative to the workspace, never leaving it."""
    if not rel or rel.startswith("/") or "\0" in rel:
        raise ValueError(f"empty_dirs: {rel!r} must be a path relative to the workspace (no leading '/')")
    norm = posixpath.normpath(rel)
    if norm == "." or norm == ".." or norm.startswith("../"):
        raise ValueError(f"empty_dirs: {rel!r} leaves the workspace; name a folder inside it")
    return norm


def make_empty_dirs(root: Path, rels: list[str]) -> None:
    """Make each folder under ``root``, never through a link: a component that exists as
    anything but a folder is an error (the loader refuses such a task first)."""
    for rel in rels:
        cur = root
        for part in Path(rel).parts:
            cur = cur / part
            try:
                os.mkdir(cur, 0o755)
                continue
            except FileExistsError:
                pass
            if not stat.S_ISDIR(os.lstat(cur).st_mode):
                raise ValueError(f"empty_dirs: {rel!r}: {part!r} is already a file or a link in the workspace")


def empty_dir_problem(workspace: Path, rel: str) -> str | None:
    """Why ``rel`` cannot be made in the task's workspace folder (None: it can)."""
    cur = workspace
    for part in Path(rel).parts:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            return None
        if not stat.S_ISDIR(st.st_mode):
            return f"{part!r} in {rel!r} is already a file or a link in the workspace"
    return None


class ShebangError(ValueError):
    """A script's first line names an interpreter that cannot be run."""


def interpreter(script: Path) -> list[str]:
    """The argv prefix that runs ``script`` as the kernel would by its ``#!`` line (the
    interpreter and at most one argument, as Linux passes them), else ``/bin/sh``. Read here, not
    left to the kernel, so a script need not be executable (task folders lose the bit in archives)."""
    try:
        with open(script, "rb") as f:
            head = f.read(256)
    except OSError as e:
        raise ShebangError(f"cannot read {script.name}: {e.strerror}") from e
    if not head.startswith(b"#!"):
        return ["/bin/sh"]
    line = head[2:].split(b"\n", 1)[0].strip()
    try:
        text = line.decode()
    except UnicodeDecodeError as e:
        raise ShebangError(f"{script.name}: the #! line is not UTF-8") from e
    if not text:
        raise ShebangError(f"{script.name}: the #! line names no interpreter; write e.g. #!/bin/bash")
    prog, _, arg = text.partition(" ")
    if not prog.startswith("/"):
        raise ShebangError(f"{script.name}: the #! interpreter {prog!r} is not an absolute path; "
                           "write e.g. #!/bin/bash or #!/usr/bin/env bash")
    arg = arg.strip()
    return [prog, arg] if arg else [prog]
