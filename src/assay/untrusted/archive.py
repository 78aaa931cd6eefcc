"""Deterministic, bounded ``.tar.zst`` archives: suite packages and workspace diffs.

Writing is reproducible (sorted members, zero times and owners) so equal content gives equal
bytes. Reading is defensive: the decompressed size is capped (no zip bombs), only regular
files are returned, and member names are data, never paths to extract to.
"""

from __future__ import annotations

import io
import tarfile

import zstandard

#: decompressed bytes read from one archive at most
MAX_ARCHIVE_BYTES = 1 << 30


class ArchiveError(ValueError):
    """The bytes are not a readable archive of the expected kind."""


def write_tar_zst(members: list[tuple[str, bytes, int]], *, level: int = 10) -> bytes:
    """``members`` is a list of (name, content, mode); returns the compressed archive."""
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name, data, mode in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = mode
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))
    return zstandard.ZstdCompressor(level=level).compress(raw.getvalue())


def read_tar_zst(data: bytes, *, limit: int = MAX_ARCHIVE_BYTES) -> dict[str, bytes]:
    """Every regular file of the archive by member name; raises :class:`ArchiveError`."""
    try:
        reader = zstandard.ZstdDecompressor().stream_reader(io.BytesIO(data))
        raw = reader.read(limit + 1)
    except zstandard.ZstdError as e:
        raise ArchiveError(f"not zstandard-compressed data ({e})") from None
    if len(raw) > limit:
        raise ArchiveError(f"decompresses to more than {limit} bytes")
    out: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            for m in tar:
                if not m.isfile():
                    raise ArchiveError(f"member {m.name!r} is not a regular file")
                f = tar.extractfile(m)
                out[m.name] = f.read() if f is not None else b""
    except tarfile.TarError as e:
        raise ArchiveError(f"not a tar archive ({e})") from None
    return out
