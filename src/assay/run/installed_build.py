"""Which build of assay ran, when no git commit says it: the install's own list of its files.

An assay installed from a wheel (``pip install assay``) has no repository, and its version string
names a release, not the bytes. pip writes every installed file with its SHA-256 into the
distribution's ``RECORD``; the digest of that file names the build as it was installed. The files
are not hashed again against it on every run (about a thousand files, 16-37 ms here): an edit made
after the install is not seen.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import os
from pathlib import Path


def installed_record(src: Path) -> str | None:
    """SHA-256 of the RECORD of the installed distribution the sources in ``src`` (the imported
    ``assay`` package) belong to; None when they belong to none (a checkout, an editable install,
    another copy ahead on the path)."""
    try:
        dist = importlib.metadata.distribution("assay")
        init = Path(str(dist.locate_file("assay/__init__.py")))
        if not init.exists() or not os.path.samefile(init, src / "__init__.py"):
            return None
        listed = [f for f in dist.files or () if f.name == "RECORD" and f.parent.name.endswith(".dist-info")]
        raw = Path(str(dist.locate_file(listed[0]))).read_bytes() if listed else None
    except (importlib.metadata.PackageNotFoundError, OSError, ValueError):
        return None
    return hashlib.sha256(raw).hexdigest() if raw else None  # the file's own bytes (pip ends its lines CRLF)


__all__ = ["installed_record"]
