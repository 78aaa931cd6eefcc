"""BuildKit's ``RUN`` flags (``--network=``, ``--mount=``, ``--security=``), read as BuildKit reads
them: what each asks of the one build step it is on, or why it cannot be given here.

- ``--network=default`` and ``--network=host`` give the step the network, as every build step here
  has it; ``--network=none`` runs the step with a loopback only.
- ``--mount=type=cache`` and ``type=tmpfs``: an empty folder at the target during the step, and
  nothing written there stays in the image (a fresh builder's cache is empty too).
- ``--mount=type=bind`` (the default type): a path of the build context at the target during the
  step, read-only unless ``rw`` (whose writes are then thrown away).
- Refused, each with its fix: ``type=secret`` and ``type=ssh`` (the build has neither),
  ``from=`` another stage or image, ``--security``, a flag BuildKit does not have.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import PurePosixPath

from assay.spec.dockerfile_parts import LineError, Mount

#: the mount options assay honours or may ignore without changing what the step builds
_SHARING_KEYS = frozenset({"id", "sharing", "mode", "uid", "gid", "required", "size"})
_READONLY = {"ro": True, "readonly": True, "rw": False, "readwrite": False}


@dataclass(frozen=True)
class RunFlags:
    """What a RUN line's flags ask for, and the command after them."""

    network: bool = True
    mounts: tuple[Mount, ...] = ()
    command: str = ""


def split_flags(args: str, workdir: str) -> RunFlags:
    """The leading ``--flag=value`` words of a RUN line's ``args`` and the command after them
    (targets relative to ``workdir`` made absolute); :class:`LineError` for a flag not honoured."""
    first, nl, later = args.partition("\n")
    words = first.split(" ")
    network, mounts = True, []
    while words and words[0].startswith("--"):
        word = words.pop(0)
        name, eq, value = word.partition("=")
        if not eq:
            raise LineError(f"RUN flag {word} has no value", f"write it as {word}=VALUE, as BuildKit requires")
        if name == "--network":
            if value not in ("default", "host", "none"):
                raise LineError(f"RUN flag {word}: BuildKit's networks are default, host and none",
                                   "use one of them (every build step here has the network unless --network=none)")
            network = value != "none"
        elif name == "--mount":
            mounts.append(_mount(value, workdir))
        elif name == "--security":
            raise LineError(f"RUN flag {word} is not honoured here (build steps are never privileged)",
                               "drop the flag, and do what needs the privilege when the task runs")
        else:
            raise LineError(f"RUN flag {name} is not honoured here",
                               "drop the flag (--network= and --mount= are the RUN flags assay honours)")
        while words and words[0] == "":
            words.pop(0)
    return RunFlags(network, tuple(mounts), " ".join(words).strip() + nl + later)


def _mount(spec: str, workdir: str) -> Mount:
    try:
        [fields] = list(csv.reader([spec]))
    except (csv.Error, ValueError):
        raise LineError(f"--mount={spec} is not a comma-separated list of options", "write type=...,target=...")
    opts: dict[str, str] = {}
    for f in fields:
        key, eq, value = f.partition("=")
        opts[key.strip().lower()] = value.strip() if eq else "true"
    kind = opts.pop("type", "bind")
    if kind in ("secret", "ssh"):
        raise LineError(f"--mount=type={kind}: a build here has no {'secrets' if kind == 'secret' else 'SSH agent'} to give",
                           "put what the step needs in the build context, or fetch it when the task runs")
    if kind not in ("cache", "tmpfs", "bind"):
        raise LineError(f"--mount=type={kind} is not a mount type BuildKit has", "use cache, tmpfs or bind")
    if "from" in opts:
        raise LineError(f"--mount from={opts['from']}: mounts of another stage or image are not built here",
                           "copy what the step needs into the build context")
    target = opts.pop("target", None) or opts.pop("dst", None) or opts.pop("destination", None)
    if not target:
        raise LineError(f"--mount={spec} names no target", "add target=/path")
    path = PurePosixPath(target if target.startswith("/") else f"{workdir.rstrip('/')}/{target}")
    if path == PurePosixPath("/") or ".." in path.parts:
        raise LineError(f"--mount target {target!r} would cover the whole image or leave it",
                           "mount at a folder of its own")
    source = ""
    rw = False
    if kind == "bind":
        source = opts.pop("source", None) or opts.pop("src", None) or "."
        if ".." in PurePosixPath(source).parts:
            raise LineError(f"--mount source {source!r} leaves the build context",
                               "name a path inside the Dockerfile's folder")
        source = source.lstrip("/") or "."  # BuildKit reads a bind's source from the context's root
        for key, ro in _READONLY.items():
            if key in opts and opts.pop(key).lower() != "false":
                rw = not ro
    unknown = sorted(set(opts) - _SHARING_KEYS - set(_READONLY))
    if unknown:
        raise LineError(f"--mount option {unknown[0]} is not honoured here", "drop it")
    return Mount(kind, str(path), source, rw)
