"""The local image store: content-addressed root filesystems, each built once and never modified.

Layout under the store root (``$ASSAY_IMAGE_STORE``, else ``$XDG_CACHE_HOME/assay/images``)::

    sha256-<hex>/rootfs/      the image's root filesystem (bound read-only into sandboxes)
    sha256-<hex>/image.json   what it is (:class:`ImageInfo`)
    sha256-<hex>/build.log    every step's output
    .building/                builds under way: a half-built image never has a name
    .locks/<hex>.lock         one build of a digest at a time (the second waits, then finds it)

An image enters the store by one ``rename`` of a finished build folder, so its name existing
means it is whole.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

PREFIX = "sha256-"
INFO = "image.json"
ROOTFS = "rootfs"
LOG = "build.log"


def store_root() -> Path:
    """Where images live: ``$ASSAY_IMAGE_STORE``, else ``$XDG_CACHE_HOME/assay/images``."""
    if os.environ.get("ASSAY_IMAGE_STORE"):
        return Path(os.environ["ASSAY_IMAGE_STORE"])
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "assay" / "images"


@dataclass(frozen=True)
class ImageInfo:
    """What the store records of one image (``image.json``)."""

    digest: str  # sha256:<hex> over what it was built from
    name: str  # what declared it (a task id, "base:bookworm")
    kind: str  # "base" or "image"
    rootfs_sha256: str  # over every file of the built rootfs
    env: dict[str, str] = field(default_factory=dict)
    user: str | None = None
    workdir: str | None = None
    deviations: list[str] = field(default_factory=list)
    inputs: dict[str, object] = field(default_factory=dict)
    build_s: float = 0.0
    size_bytes: int = 0
    created_at: float = 0.0

    @property
    def ref(self) -> str:
        """``name@sha256:<hex>``, as the manifest names it."""
        return f"{self.name}@{self.digest}"


def rootfs_digest(root: Path) -> tuple[str, int]:
    """One sha256 over every entry of ``root`` (path, type, mode, link target or content), and
    the bytes of its regular files."""
    h = hashlib.sha256(b"assay-rootfs-v1\n")
    size = 0
    for dirpath, dirs, files in os.walk(root):
        dirs.sort()
        rel_dir = os.path.relpath(dirpath, root)
        for name in sorted(files + [d for d in dirs if os.path.islink(os.path.join(dirpath, d))]):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if stat.S_ISLNK(st.st_mode):
                h.update(f"L {rel} {os.readlink(p)}\n".encode(errors="surrogateescape"))
            elif stat.S_ISREG(st.st_mode):
                fh = hashlib.sha256()
                with open(p, "rb") as f:
                    while chunk := f.read(1 << 20):
                        fh.update(chunk)
                size += st.st_size
                h.update(f"F {rel} {st.st_mode:o} {fh.hexdigest()}\n".encode(errors="surrogateescape"))
            else:
                h.update(f"S {rel} {st.st_mode:o} {st.st_rdev}\n".encode(errors="surrogateescape"))
        for d in dirs:
            if not os.path.islink(os.path.join(dirpath, d)):
                st = os.lstat(os.path.join(dirpath, d))
                h.update(f"D {os.path.normpath(os.path.join(rel_dir, d))} {st.st_mode:o}\n".encode(errors="surrogateescape"))
    return "sha256:" + h.hexdigest(), size


class ImageStore:
    """One store root; every method is safe with other processes using the same root."""

    def __init__(self, root: Path | None = None):
        self.root = Path(root) if root is not None else store_root()

    def path(self, digest: str) -> Path:
        return self.root / (PREFIX + digest.removeprefix("sha256:"))

    def rootfs(self, digest: str) -> Path:
        return self.path(digest) / ROOTFS

    def get(self, digest: str) -> ImageInfo | None:
        """The image of ``digest`` if the store holds it (one stat and one small read)."""
        try:
            data = json.loads((self.path(digest) / INFO).read_text())
        except (OSError, ValueError):
            return None
        info = ImageInfo(**data)
        return info if info.digest == digest else None

    def images(self) -> list[ImageInfo]:
        """Every image in the store, oldest first."""
        if not self.root.is_dir():
            return []
        found = [self.get("sha256:" + p.name.removeprefix(PREFIX)) for p in self.root.iterdir()
                 if p.name.startswith(PREFIX)]
        return sorted((i for i in found if i is not None), key=lambda i: i.created_at)

    @contextmanager
    def lock(self, digest: str) -> Iterator[None]:
        """Held while ``digest`` is built: a second build of it waits here, then finds it built."""
        locks = self.root / ".locks"
        locks.mkdir(parents=True, exist_ok=True)
        fd = os.open(locks / f"{digest.removeprefix('sha256:')}.lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def scratch(self) -> Path:
        """A fresh folder for one build, inside the store (same filesystem: commit is a rename)."""
        building = self.root / ".building"
        building.mkdir(parents=True, exist_ok=True)
        return Path(tempfile.mkdtemp(dir=building, prefix="build-"))

    def commit(self, build_dir: Path, info: ImageInfo) -> ImageInfo:
        """Name a finished build: ``image.json`` written, then the folder renamed in one step."""
        (build_dir / INFO).write_text(json.dumps(asdict(info), indent=2, sort_keys=True))
        os.chmod(build_dir, 0o755)
        os.rename(build_dir, self.path(info.digest))
        return info

    def discard(self, build_dir: Path) -> None:
        """Remove a build that did not finish (it never had a name)."""
        shutil.rmtree(build_dir, ignore_errors=True)

    def remove(self, digest: str) -> bool:
        """Remove one image (renamed aside first, so no reader sees it half removed)."""
        p = self.path(digest)
        if not p.is_dir():
            return False
        with self.lock(digest):
            aside = self.root / ".building" / f"removing-{p.name}"
            (self.root / ".building").mkdir(exist_ok=True)
            os.rename(p, aside)
            shutil.rmtree(aside, ignore_errors=True)
        return True

    def sweep(self) -> int:
        """Remove leftovers of builds that died (no live build holds their folder's lock)."""
        building = self.root / ".building"
        if not building.is_dir():
            return 0
        n = 0
        for p in building.iterdir():
            fd = os.open(p, os.O_RDONLY)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # a live build
            finally:
                os.close(fd)
            shutil.rmtree(p, ignore_errors=True)
            n += 1
        return n
