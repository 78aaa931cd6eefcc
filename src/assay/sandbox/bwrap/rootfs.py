"""What a bubblewrap sandbox's filesystem is made of, as bwrap arguments.

A curated, read-only system (``/usr`` and its merged-usr links, ``/etc`` with credential files
masked) plus the Python install that runs the harness, so ``sys.executable`` works inside for
the verifier and the supervisor. Nothing else of the host is visible: no home directories, no
suites (hidden tests stay out), no run directories, no other trial's scratch.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

SYSTEM_DIRS = ("/usr", "/etc")
MERGED_USR = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: host files that never enter a sandbox, even read-only
MASKED_FILES = ("/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers",
                "/etc/security/opasswd", "/etc/machine-id")
MASKED_DIRS = ("/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private")


def _covered(path: Path, roots: list[Path]) -> bool:
    return any(path == r or path.is_relative_to(r) for r in roots)


def minimal_roots(paths: list[Path]) -> list[Path]:
    """Existing paths with every path nested in another one dropped (order kept)."""
    out: list[Path] = []
    for p in sorted({p for p in paths if p.exists()}, key=lambda p: len(p.parts)):
        if not _covered(p, out):
            out.append(p)
    return out


@functools.lru_cache(maxsize=1)
def python_roots() -> tuple[Path, ...]:
    """Host paths that make this interpreter and the installed assay importable inside: its
    prefixes (site-packages and the standard library are inside them), the directory holding
    ``assay`` and the interpreter's own, never what ``PYTHONPATH`` or a test runner added, and
    nothing under ``/usr`` (bound whole already).

    A clean interpreter's ``sys.path`` (``python -I``, a process of its own on every run) was once
    added too, but only its entries inside the prefixes: those are always dropped again as nested
    in a prefix, so it never changed the roots (tests/sandbox/test_python_roots.py).
    """
    import assay

    prefixes = [Path(p).resolve() for p in {sys.prefix, sys.base_prefix, sys.exec_prefix}]
    assay_root = Path(assay.__file__).resolve().parent.parent
    exe_dir = Path(sys.executable).resolve().parent
    wanted = [*prefixes, assay_root, exe_dir]
    return tuple(minimal_roots([p for p in wanted if not _covered(p, [Path("/usr")])]))


def parents_args(target: str, made: set[str]) -> list[str]:
    """``--dir`` arguments (mode 0755) for the parents of ``target`` not made yet."""
    args: list[str] = []
    parts = Path(target).parts[1:-1]
    cur = ""
    for part in parts:
        cur = f"{cur}/{part}"
        if cur not in made:
            made.add(cur)
            args += ["--perms", "0755", "--dir", cur]
    return args


def system_args(made: set[str]) -> list[str]:
    """Read-only system directories, merged-usr links and credential masks."""
    args: list[str] = []
    for d in SYSTEM_DIRS:
        if Path(d).is_dir():
            args += [*parents_args(d, made), "--ro-bind", d, d]
            made.add(d)
    for d in MERGED_USR:
        p = Path(d)
        if p.is_symlink():
            args += ["--symlink", str(p.readlink()), d]
        elif p.is_dir():
            args += ["--ro-bind", d, d]
        made.add(d)
    for f in MASKED_FILES:
        if Path(f).is_file():
            args += ["--ro-bind", "/dev/null", f]
    for d in MASKED_DIRS:
        if Path(d).is_dir():
            args += ["--perms", "0755", "--tmpfs", d]
    return args


def python_args(made: set[str], extra: tuple[Path, ...] = ()) -> list[str]:
    """Read-only binds of the Python install (and ``extra`` host paths) at their own paths."""
    args: list[str] = []
    for root in minimal_roots([*python_roots(), *extra]):
        if _covered(root, [Path(m) for m in made if m in SYSTEM_DIRS]):
            continue
        args += [*parents_args(str(root), made), "--ro-bind", str(root), str(root)]
        made.add(str(root))
    return args


@functools.lru_cache(maxsize=4)
def cached_args(extra: tuple[Path, ...]) -> tuple[list[str], list[str], frozenset[str]]:
    """The read-only system and Python binds and the paths they make (the same for every
    sandbox of this process)."""
    made = {"/"}
    system = system_args(made)
    python = python_args(made, extra=extra)
    return system, python, frozenset(made)
