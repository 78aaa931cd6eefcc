"""``COPY`` and ``ADD`` lines: from the build context, from an earlier stage (``--from=STAGE``), or
uv's own image read as uv's wheel from PyPI."""

from __future__ import annotations

import json
import os
import re
import shlex
from pathlib import Path

from assay.spec.dockerfile_parts import DockerfileError, Instruction, LineError, Step, substitute
from assay.spec.dockerfile_stages import stage_path, stage_ref

#: ``COPY --from=`` of uv's own image (a two-line install many Harbor tasks use): the same uv,
#: version for version, is a wheel on PyPI whose ``bin/`` holds ``uv`` and ``uvx``
_UV_IMAGE = re.compile(r"^--from=(?:ghcr\.io/astral-sh/uv|(?:docker\.io/)?astral/uv)(?::([0-9][0-9A-Za-z.]*)[^\s@]*|"
                       r":latest)?(?:@sha256:[0-9a-f]{64})?$")
_UV_FILES = {"/uv": "uv", "/uvx": "uvx", "/bin/uv": "uv", "/bin/uvx": "uvx"}


def _uv_copy(ins: Instruction, words: list[str], path: Path, workdir: str) -> Step | None:
    """``COPY --from=ghcr.io/astral-sh/uv:X /uv /uvx DEST`` as a RUN that installs uv X from PyPI
    and copies its two binaries to DEST (None: not that shape, refused as before)."""
    flags = [w for w in words if w.startswith("--")]
    m = _UV_IMAGE.match(flags[0]) if len(flags) == 1 else None
    rest = [w for w in words if not w.startswith("--")]
    if m is None or len(rest) < 2 or not all(src in _UV_FILES for src in rest[:-1]):
        return None
    version, dest = m.group(1), rest[-1]
    if not dest.startswith("/"):
        dest = f"{workdir.rstrip('/')}/{dest}"
    into = dest if dest.endswith("/") or len(rest) > 2 else None
    pin = f"uv=={version}" if version else "uv"
    copies = " && ".join(f"cp /tmp/.assay-uv/bin/{_UV_FILES[src]} {shlex.quote(into + _UV_FILES[src] if into else dest)}"
                         for src in rest[:-1])
    script = (f"python3 -m pip install --quiet --no-cache-dir --disable-pip-version-check --target /tmp/.assay-uv "
              f"{shlex.quote(pin)} && mkdir -p {shlex.quote(into or os.path.dirname(dest) or '/')} && {copies} && "
              "rm -rf /tmp/.assay-uv")
    what = f"uv {version}" if version else "the newest uv (the image's tag names no version)"
    return Step("run", ins.line, argv=("/bin/sh", "-c", script),
                deviation=f"{path.name}:{ins.line}: COPY {flags[0]} ({' '.join(rest[:-1])}) read as {what} from PyPI's "
                          "wheel (the same binaries; the image itself cannot be fetched here)")


def copy_step(ins: Instruction, path: Path, scope: dict[str, str], workdir: str, names: dict[str, int],
              count: int) -> Step:
    """The step of one COPY/ADD line (``names``: the earlier stages by name, ``count`` of them)."""
    from_stage = None
    if not ins.args.startswith("[") and ins.keyword == "COPY" and "--from=" in ins.args:
        words = shlex.split(ins.args)
        uv = _uv_copy(ins, words, path, workdir)
        if uv is not None:
            return uv
        value = substitute(next(w for w in words if w.startswith("--from="))[len("--from="):], scope)
        try:
            from_stage = stage_ref(value, names, count)
        except LineError as e:
            raise DockerfileError(path, ins.line, e.message, e.fix) from None
        ins = Instruction(ins.keyword, " ".join(shlex.quote(w) for w in words if not w.startswith("--from=")),
                          ins.line)
    if ins.args.startswith("["):
        try:
            words = [str(w) for w in json.loads(ins.args)]
        except ValueError as e:
            raise DockerfileError(path, ins.line, f"{ins.keyword} exec form is not a JSON list", "fix the list") from e
    else:
        words = shlex.split(ins.args)
    flags = [w for w in words if w.startswith("--")]
    for f in flags:
        if not f.startswith("--chown=") and not f.startswith("--chmod="):
            raise DockerfileError(path, ins.line, f"{ins.keyword} {f}: only local files are copied here",
                                  "copy from the build context (drop the flag)")
    words = [substitute(w, scope) for w in words if not w.startswith("--")]
    if len(words) < 2:
        raise DockerfileError(path, ins.line, f"{ins.keyword} needs a source and a destination", "write COPY SRC DEST")
    dest = words[-1] if words[-1].startswith("/") else f"{workdir.rstrip('/')}/{words[-1]}"
    if from_stage is not None:
        try:
            sources = tuple(stage_path(w) for w in words[:-1])
        except LineError as e:
            raise DockerfileError(path, ins.line, e.message, e.fix) from None
        return Step("copy", ins.line, sources=sources, dest=dest, from_stage=from_stage)
    for src in words[:-1]:
        if re.match(r"^[a-z]+://", src):
            raise DockerfileError(path, ins.line, f"{ins.keyword} of a URL ({src}) is not fetched while building",
                                  "download it in a RUN step (curl) or put the file in the context")
        if src.startswith("/") or ".." in Path(src).parts:
            raise DockerfileError(path, ins.line, f"{ins.keyword} source {src!r} leaves the build context",
                                  "name a file inside the Dockerfile's folder")
    return Step("copy", ins.line, sources=tuple(words[:-1]), dest=dest)
