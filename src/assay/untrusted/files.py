"""Reading files the agent wrote, from the host, without trusting them (docs/security.md).

Everything under an agent's home was written by the agent and is hostile: a session file may
be a symbolic link to a host secret, a directory on the way may be a link out of the home, a
"file" may be a FIFO that blocks a reader forever. Every read here walks from a directory
descriptor of the home one component at a time with ``O_NOFOLLOW``, takes only regular files,
and never opens a path outside the home. The only write into a home the agent has been in is
:func:`write_new` (a conversation's next turn): a new file, created exclusively, through directory
descriptors opened without following links. A file that fails these checks is skipped, as if absent.

SQLite databases are read from a private copy made this way (:func:`sqlite_copy`), because
SQLite opens by path and would follow a planted link. The copy is hostile too: its schema is SQL the
agent wrote, run in the harness's own process. Only ordinary tables are read (:func:`plain_tables`:
never a view, a virtual table or a computed column), with SQLite's step counter and value-length
limit as bounds, and zstd data is inflated within a byte budget (:func:`inflate`): a few kilobytes
can claim gigabytes.
"""

from __future__ import annotations

import fnmatch
import io
import os
import re
import shutil
import sqlite3
import stat
import tempfile
from pathlib import Path, PurePosixPath
from typing import Any, Callable

#: the largest native file read back (a session log is far smaller)
MAX_BYTES = 64 << 20
#: SQLite virtual-machine steps one read of a planted database may take (an honest store needs a few million)
SQL_STEPS = 200_000_000
#: the longest string or blob a query may build or return
SQL_VALUE_BYTES = 16 << 20
_STEP_EVERY = 10_000
_VIRTUAL = re.compile(r"\s*create\s+virtual\b", re.IGNORECASE)
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


class Unsafe(OSError):
    """The path is a link, not a regular file, outside the home, or too large: never read."""


def _parts(rel: str | PurePosixPath) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p not in ("", ".")]
    if PurePosixPath(rel).is_absolute() or ".." in parts or not parts:
        raise Unsafe(f"{rel!s} is not a path inside the agent home")
    return parts


def _open_dir(home: Path, parts: list[str]) -> int:
    fd = os.open(home, _DIR)
    try:
        for name in parts:
            nxt = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError:
        os.close(fd)
        raise
    return fd


def _open_file(home: Path, rel: str | PurePosixPath) -> int:
    """A descriptor of the regular file ``home/rel``, reached without following a link."""
    parts = _parts(rel)
    try:
        dfd = _open_dir(home, parts[:-1])
    except OSError as e:
        raise Unsafe(f"{rel!s}: a directory on the way is missing or a link ({e.strerror})") from e
    try:
        fd = os.open(parts[-1], _FILE, dir_fd=dfd)
    except OSError as e:
        raise Unsafe(f"{rel!s}: missing or a link ({e.strerror})") from e
    finally:
        os.close(dfd)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Unsafe(f"{rel!s} is not a regular file")
    return fd


def read_bytes(home: Path, rel: str | PurePosixPath, limit: int = MAX_BYTES) -> bytes:
    """The content of the regular file ``home/rel``; :class:`Unsafe` (or OSError) otherwise."""
    fd = _open_file(home, rel)
    try:
        if os.fstat(fd).st_size > limit:
            raise Unsafe(f"{rel!s} is larger than {limit} bytes")
        chunks, left = [], limit + 1
        while left > 0 and (chunk := os.read(fd, min(left, 1 << 20))):
            chunks.append(chunk)
            left -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limit:
            raise Unsafe(f"{rel!s} grew past {limit} bytes")
        return data
    finally:
        os.close(fd)


def write_new(home: Path, rel: str | PurePosixPath, data: bytes) -> None:
    """Create the file ``home/rel`` (and missing directories on the way) without following a link
    anywhere: an entry already there, a link or not, is the agent's and raises :class:`Unsafe`."""
    parts = _parts(rel)
    fd = os.open(home, _DIR)
    try:
        for name in parts[:-1]:
            try:
                os.mkdir(name, 0o755, dir_fd=fd)
            except FileExistsError:
                pass
            try:
                nxt = os.open(name, _DIR, dir_fd=fd)
            except OSError as e:
                raise Unsafe(f"{rel!s}: {name} is a link or not a directory ({e.strerror})") from e
            os.close(fd)
            fd = nxt
        try:
            out = os.open(parts[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                          dir_fd=fd)
        except FileExistsError as e:
            raise Unsafe(f"{rel!s} already exists in the agent home (planted by the agent?)") from e
    finally:
        os.close(fd)
    with os.fdopen(out, "wb") as f:
        f.write(data)


def read_text(home: Path, rel: str | PurePosixPath) -> str:
    return read_bytes(home, rel).decode("utf-8", errors="replace")


def is_file(home: Path, rel: str | PurePosixPath) -> bool:
    """A regular file reachable without following a link."""
    return size(home, rel) is not None


def size(home: Path, rel: str | PurePosixPath) -> int | None:
    """The size of the regular file ``home/rel`` reached without following a link, or None."""
    try:
        parts = _parts(rel)
        dfd = _open_dir(home, parts[:-1])
    except OSError:
        return None
    try:
        st = os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False)
    except OSError:
        return None
    finally:
        os.close(dfd)
    return st.st_size if stat.S_ISREG(st.st_mode) else None


def read_head(home: Path, rel: str | PurePosixPath, limit: int) -> bytes:
    """The first line of the regular file ``home/rel`` (at most ``limit`` bytes, whatever the file's
    size), read as :func:`read_bytes` reads; :class:`Unsafe` (or OSError) otherwise."""
    fd = _open_file(home, rel)
    try:
        return os.pread(fd, limit, 0).split(b"\n", 1)[0]
    finally:
        os.close(fd)


Visit = Callable[[int, str, os.stat_result, PurePosixPath, bool], None]


def _walk(home: Path, pattern: str, visit: Visit) -> None:
    """Call ``visit(dir_fd, name, lstat, relative path, last component?)`` for every entry matching
    ``pattern`` component by component; descends only into real directories, never through a link."""

    def walk(dfd: int, at: PurePosixPath, rest: list[str]) -> None:
        try:
            names = sorted(os.listdir(dfd))
        except OSError:
            return
        for name in names:
            if not fnmatch.fnmatchcase(name, rest[0]):
                continue
            try:
                st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            except OSError:
                continue
            last = len(rest) == 1
            visit(dfd, name, st, at / name, last)
            if not last and stat.S_ISDIR(st.st_mode):
                try:
                    sub = os.open(name, _DIR, dir_fd=dfd)
                except OSError:
                    continue
                try:
                    walk(sub, at / name, rest[1:])
                finally:
                    os.close(sub)

    try:
        root = os.open(home, _DIR)
    except OSError:
        return
    try:
        walk(root, PurePosixPath(), _parts(pattern))
    finally:
        os.close(root)


def glob(home: Path, pattern: str) -> list[PurePosixPath]:
    """Regular files under ``home`` matching ``pattern`` component by component (``*``, ``?``, ``[]``;
    no ``**``), never descending through a link. Relative paths, sorted."""
    found: list[PurePosixPath] = []

    def visit(dfd: int, name: str, st: os.stat_result, rel: PurePosixPath, last: bool) -> None:
        if last and stat.S_ISREG(st.st_mode):
            found.append(rel)

    _walk(home, pattern, visit)
    return sorted(found)


def unsafe_entries(home: Path, patterns: list[str]) -> list[dict[str, str]]:
    """Links and special files where a reader looks (entries matching ``patterns`` component by
    component): the product writes regular files and folders there, so each is a planted trap.
    Reported as ``{"path", "kind", "target"}``; never followed."""
    found: dict[str, dict[str, str]] = {}

    def visit(dfd: int, name: str, st: os.stat_result, rel: PurePosixPath, last: bool) -> None:
        key = rel.as_posix()
        if stat.S_ISLNK(st.st_mode):
            try:
                target = os.readlink(name, dir_fd=dfd)
            except OSError:
                target = "?"
            found[key] = {"path": key, "kind": "symlink", "target": target}
        elif last and not stat.S_ISREG(st.st_mode):
            found[key] = {"path": key, "kind": "not a regular file", "target": ""}

    for pattern in patterns:
        _walk(home, pattern, visit)
    return [found[k] for k in sorted(found)]


#: the fact an adapter reports when it found traps where it reads its session (see docs/security.md)
TRAPS = "unsafe_home_entries"


def with_traps(home: Path, patterns: list[str], facts: dict[str, Any]) -> dict[str, Any]:
    """``facts`` plus the :func:`unsafe_entries` under ``patterns``, when there are any."""
    traps = unsafe_entries(home, patterns)
    return {**facts, TRAPS: traps} if traps else facts


def mtime(home: Path, rel: str | PurePosixPath) -> float:
    parts = _parts(rel)
    dfd = _open_dir(home, parts[:-1])
    try:
        return os.stat(parts[-1], dir_fd=dfd, follow_symlinks=False).st_mtime
    finally:
        os.close(dfd)


def export_path(attempt_dir: Path, name: str) -> Path:
    """Where an adapter writes a native file it exported (harness-owned, never the agent home)."""
    if "/" in name or name in ("", ".", ".."):
        raise ValueError(f"export name {name!r} must be a plain file name")
    d = attempt_dir / "native"
    d.mkdir(parents=True, exist_ok=True)
    return d / name


def write_export(attempt_dir: Path, name: str, data: bytes) -> Path:
    """Write an exported native file next to the attempt (never following a link)."""
    dest = export_path(attempt_dir, name)
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    return dest


def copy_out(home: Path, rel: str | PurePosixPath, attempt_dir: Path, name: str) -> Path:
    """Copy ``home/rel`` (read safely) to the attempt's export folder as ``name``."""
    return write_export(attempt_dir, name, read_bytes(home, rel))


class sqlite_copy:
    """``with sqlite_copy(home, rel) as db:`` a read-only connection to a private copy of the
    database (and its WAL journal), made without following links; the copy is removed after.

    The connection is bounded: :data:`SQL_STEPS` virtual-machine steps in all, values of at most
    :data:`SQL_VALUE_BYTES`, writes refused. (``trusted_schema = OFF`` is not set: OpenClaw's own
    schema calls ``json_valid`` and would not open; the step and length bounds hold either way.)
    A read that hits a bound, or any SQLite error inside the block, leaves as :class:`Unsafe`."""

    def __init__(self, home: Path, rel: str | PurePosixPath):
        self.home, self.rel = home, PurePosixPath(rel)
        self.tmp: str | None = None
        self.db: sqlite3.Connection | None = None

    def __enter__(self) -> sqlite3.Connection:
        self.tmp = tempfile.mkdtemp(prefix="assay-native-db-")
        try:
            target = Path(self.tmp) / "db.sqlite"
            target.write_bytes(read_bytes(self.home, self.rel))
            wal = self.rel.with_name(self.rel.name + "-wal")
            if is_file(self.home, wal):
                (Path(self.tmp) / "db.sqlite-wal").write_bytes(read_bytes(self.home, wal))
        except BaseException:  # refused (a link, too large): __exit__ is not called for a failed __enter__
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        self.db = sqlite3.connect(target)  # a private copy: its schema may use SQL functions (OpenClaw's uses json_valid)
        self.db.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SQL_VALUE_BYTES)
        ticks = iter(range(SQL_STEPS // _STEP_EVERY))
        self.db.set_progress_handler(lambda: next(ticks, None) is None, _STEP_EVERY)  # true: interrupt
        self.db.execute("PRAGMA query_only = 1")
        return self.db

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: object) -> None:
        if self.db is not None:
            self.db.close()
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        if isinstance(value, (sqlite3.Error, MemoryError)):
            raise Unsafe(f"{self.rel!s}: not read within bounds ({type(value).__name__}: {value})") from value


def plain_tables(db: sqlite3.Connection, rel: str | PurePosixPath, names: list[str]) -> set[str]:
    """Which of ``names`` the database holds as ordinary tables. Anything else of such a name (a
    view, a virtual table, a table with a column computed on read) would run SQL the agent wrote
    when queried: :class:`Unsafe`."""
    found: set[str] = set()
    for name in names:
        rows = db.execute("SELECT type, sql FROM sqlite_master WHERE lower(name) = lower(?)", (name,)).fetchall()
        if not rows:
            continue
        computed = [c for c in db.execute("SELECT name, hidden FROM pragma_table_xinfo(?)", (name,)) if c[1] == 2]
        if any(kind != "table" or _VIRTUAL.match(sql or "") for kind, sql in rows) or computed:
            raise Unsafe(f"{rel!s}: {name!r} is not a plain table (a view, a virtual table or a computed column); "
                         "reading it would run SQL the agent wrote")
        found.add(name)
    return found


def inflate(raw: bytes, limit: int = MAX_BYTES, what: str = "zstd data") -> bytes:
    """Every frame of a zstd stream, at most ``limit`` bytes of it; a torn last frame keeps what came
    before it (a killed writer tears its last frame). More than ``limit``: :class:`Unsafe`."""
    import zstandard

    reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(raw), read_across_frames=True)
    out = bytearray()
    try:
        while chunk := reader.read(min(1 << 16, limit + 1 - len(out))):
            out += chunk
            if len(out) > limit:
                raise Unsafe(f"{what} inflates past {limit} bytes")
    except zstandard.ZstdError:
        pass
    return bytes(out)
