"""``COPY``/``ADD`` into an image being built, from the build context or an earlier stage.

A third-party task's Dockerfile is hostile input, and the builder runs as root. Two rules keep
its files and links from reaching the host:

- every source is resolved inside its own root (the build context, or the stage's image) as that
  root's system would resolve it (``untrusted/rooted.py``): a link to ``/etc/shadow`` names the
  stage's own file, or in the context nothing at all; a folder's links are copied as links;
- the copy itself runs inside the build's sandbox, whose root is the image: a link the image
  holds on the way to the destination (``RUN ln -s /HOST/PATH /app``, then ``COPY x /app/``)
  resolves inside the image. Copied on the host, that wrote into the host's file system.
"""

from __future__ import annotations

import shlex
from pathlib import Path


class CopyFailed(Exception):
    """A source is not where the COPY line says (``str``: which, and why)."""


#: where the sources are seen inside the build's sandbox (its /run is a tmpfs: nothing lands in the image)
_SEEN = "/run/assay-copy"


def copy_argv(sources: list[Path], dest: str) -> tuple[list[str], tuple[tuple[str, str, str], ...]]:
    """The build sandbox's command copying ``sources`` (host paths, each bound read-only) to
    ``dest``, as COPY does: a folder's contents into ``dest``, a file to ``dest`` or into it (when
    it is a folder, ends in ``/``, or there are several sources); root's files, modes and times kept."""
    mounts = tuple(("--ro-bind", str(src), f"{_SEEN}/{i}") for i, src in enumerate(sources))
    into = dest.endswith("/") or len(sources) > 1
    # the destination's links resolved in the image, dangling ones too, as BuildKit resolves them
    lines = ["set -e", f"D=$(realpath -m -- {shlex.quote(dest)})"]
    for i, src in enumerate(sources):
        seen = f"{_SEEN}/{i}"
        if src.is_dir():
            # tar, not cp: a folder the image already has as a link to a folder is written into
            # (cp refuses it), as BuildKit does
            lines.append(f'mkdir -p "$D" && tar -C {seen} -cf - . | tar -C "$D" -xf - --keep-directory-symlink '
                         '--no-same-owner')
        elif into:
            lines.append(f'mkdir -p "$D" && cp -P --preserve=mode,timestamps {seen} "$D"/{shlex.quote(src.name)}')
        else:
            lines.append(f'if [ -d "$D" ]; then cp -P --preserve=mode,timestamps {seen} "$D"/{shlex.quote(src.name)}; '
                         f'else mkdir -p "$(dirname "$D")" && cp -P --preserve=mode,timestamps {seen} "$D"; fi')
    return ["/bin/sh", "-c", "\n".join(lines)], mounts
