"""A file's SHA-256 as every reader of a run directory takes it (spec/digest.py): read in pieces
small enough to stay off the allocator's mapped buffers, the digest of exactly the file's bytes,
whatever its size against a piece, and of an open file from where it stands."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from assay.spec.digest import PIECE, sha256_file, sha256_open


@pytest.mark.parametrize("size", [0, 1, 47, PIECE - 1, PIECE, PIECE + 1, 3 * PIECE + 5, 1 << 20])
def test_the_digest_is_the_files_bytes_whatever_its_size(tmp_path: Path, size: int) -> None:
    data = bytes((i * 7 + size) % 251 for i in range(size))
    path = tmp_path / "f"
    path.write_bytes(data)
    assert sha256_file(path) == hashlib.sha256(data).hexdigest()
    with open(path, "rb") as f:
        f.read(size // 3)
        assert sha256_open(f) == hashlib.sha256(data[size // 3:]).hexdigest()  # from where it stands


def test_a_piece_stays_under_the_allocators_mapping_threshold() -> None:
    assert 4096 <= PIECE < 128 << 10
