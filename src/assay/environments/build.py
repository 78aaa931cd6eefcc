"""Building an image into the store: once per digest, never in place, never half.

A base is made by mmdebstrap, an image by copying its base and running its steps over the copy
(:mod:`assay.environments.steps`), both in a scratch folder of the store that is renamed to the
image's name only when everything succeeded. A failed step, an apt package that does not
exist or a build past its time raises :class:`BuildFailed` naming the file and line (or field)
with the build log's tail, and leaves nothing in the store but the log of the attempt.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import json
import os
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from assay.environments import debian, pip_records, reproducible, steps
from assay.environments.copy_step import CopyFailed, copy_argv
from assay.environments.plan import BasePlan, ImagePlan, Op
from assay.environments.store import LOG, ROOTFS, ImageInfo, ImageStore, rootfs_digest
from assay.untrusted.rooted import matches, resolve_in

#: what a progress display is told: (what, detail) at each stage of a build
Progress = Callable[[str, str], None]
FAILED_LOGS = ".failed"


class BuildFailed(Exception):
    """An image could not be built; ``where`` names the file and line (or field), ``tail`` the log's end."""

    def __init__(self, file: Path, where: str, message: str, tail: str, log: Path | None):
        super().__init__(f"{file}: {where}: {message}\n{tail}")
        self.file, self.where, self.message, self.tail, self.log = file, where, message, tail, log


def log_tail(log: Path, n: int = 2000) -> str:
    try:
        data = log.read_bytes()
    except OSError:
        return ""
    return data[-n:].decode(errors="replace")


def _quiet(stage: str, detail: str) -> None:
    return None


def _keep_log(store: ImageStore, log: Path, digest: str) -> Path:
    """The failed build's log, kept beside the store (never as an image)."""
    keep = store.root / FAILED_LOGS
    keep.mkdir(parents=True, exist_ok=True)
    dest = keep / f"{digest.removeprefix('sha256:')}.log"
    shutil.copyfile(log, dest)
    return dest


def _building(store: ImageStore) -> tuple[Path, int]:
    """A scratch folder, locked while this build lives (a sweep leaves it alone)."""
    work = store.scratch()
    fd = os.open(work, os.O_RDONLY)
    fcntl.flock(fd, fcntl.LOCK_EX)
    return work, fd


def ensure_base(store: ImageStore, plan: BasePlan, file: Path, deadline: float, progress: Progress = _quiet) -> ImageInfo:
    """The base of ``plan``, built with mmdebstrap if the store lacks it."""
    digest = plan.digest
    if (info := store.get(digest)) is not None:
        return info
    with store.lock(digest):
        if (info := store.get(digest)) is not None:  # built by whoever held the lock
            return info
        work, fd = _building(store)
        log = work / LOG
        t0 = time.monotonic()
        progress("base", f"mmdebstrap {plan.release} with {len(plan.packages)} package(s)")
        try:
            log.write_text(f"### base {plan.release}: {' '.join(plan.packages)}\n")
            sources = debian.write_sources(plan.release, work / "sources")
            steps.run(debian.argv(plan, work / ROOTFS, sources), log, deadline)
            if sources is not None:
                shutil.rmtree(sources.parent)
            pip_records.write_records(work / ROOTFS)  # what the base added, pip may replace
            reproducible.scrub(work / ROOTFS)
            sha, size = rootfs_digest(work / ROOTFS)
            info = ImageInfo(digest=digest, name=plan.name, kind="base", rootfs_sha256=sha,
                             inputs={"release": plan.release, "packages": list(plan.packages)},
                             build_s=round(time.monotonic() - t0, 2), size_bytes=size, created_at=time.time())
            return store.commit(work, info)
        except steps.StepFailed as e:
            kept = _keep_log(store, log, digest)
            what = "the build ran past its build_timeout_s" if e.timed_out else \
                f"the Debian base did not build (mmdebstrap {e.exit_code}: a package that does not exist?)"
            raise BuildFailed(file, "environment.packages", what, log_tail(log), kept) from None
        except (FileNotFoundError, ValueError) as e:
            raise BuildFailed(file, "environment", str(e), "", None) from None
        finally:
            os.close(fd)
            if work.exists():
                store.discard(work)


def _passwd(rootfs: Path, user: str) -> tuple[str, str, str] | None:
    """(uid, gid, home) of ``user`` in the image's /etc/passwd."""
    try:
        passwd = resolve_in(rootfs, "/etc/passwd")  # the image's, never a host file it links to
        for line in (passwd.read_text() if passwd is not None else "").splitlines():
            f = line.split(":")
            if len(f) >= 6 and (f[0] == user or f[2] == user):
                return f[2], f[3], f[5]
    except OSError:
        pass
    return None


def _apply(op: Op, rootfs: Path, state: dict[str, object], log: Path, deadline: float, store: ImageStore) -> None:
    env: dict[str, str] = state["env"]  # type: ignore[assignment]
    with open(log, "a") as f:
        f.write(f"\n### {op.where}: {op.kind} {' '.join(op.argv) or op.dest}\n")
    if op.kind == "env":
        env.update(op.env)
    elif op.kind == "workdir":
        state["workdir"] = op.dest  # made inside the build's sandbox: a link on its way resolves in the image
        make = 'mkdir -p -- "$(realpath -m -- "$1")"'  # a dangling link on the way made, as BuildKit does
        steps.run(steps.bwrap_argv(rootfs, ["/bin/sh", "-c", make, "sh", op.dest], env={}, cwd="/"), log, deadline)
    elif op.kind == "user":
        state["user"] = op.dest
    elif op.kind == "copy":  # inside the build's sandbox: a link in the image resolves in the image
        if op.stage is not None:
            stage_root = store.rootfs(op.stage.digest)
            sources = []
            for src in op.stage_sources:
                found = matches(stage_root, src)
                if not found:
                    raise CopyFailed(f"COPY --from source {src} is not in that stage's image (resolved inside it)")
                sources += found
        else:
            sources = list(op.sources)
        argv, mounts = copy_argv(sources, op.dest)
        steps.run(steps.bwrap_argv(rootfs, argv, env={}, cwd="/", mounts=mounts), log, deadline)
    elif op.kind == "run":
        argv = list(op.argv)
        user = state.get("user")
        if user not in (None, "root", "0") and (pw := _passwd(rootfs, str(user))) is not None:
            argv = ["setpriv", f"--reuid={pw[0]}", f"--regid={pw[1]}", "--init-groups", "--", *argv]
        cwd = str(state.get("workdir") or "/")
        with _step_mounts(op) as mounts:
            steps.run(steps.bwrap_argv(rootfs, argv, env={**dict(op.env), **env}, cwd=cwd, network=op.network,
                                       mounts=mounts), log, deadline)


@contextlib.contextmanager
def _step_mounts(op: Op) -> Iterator[tuple[tuple[str, str, str], ...]]:
    """bwrap's mounts for ``op``: a cache or tmpfs mount is an empty tmpfs, a bind the context's
    path read-only, or a throw-away copy of it when ``rw`` (BuildKit discards what a step writes
    through either)."""
    if not op.mounts:
        yield ()
        return
    with tempfile.TemporaryDirectory(prefix="assay-mount-") as scratch:
        out = []
        for i, m in enumerate(op.mounts):
            if m.source is None:
                out.append(("--tmpfs", "", m.target))
            elif not m.rw:
                out.append(("--ro-bind", str(m.source), m.target))
            else:
                copy = Path(scratch) / str(i)
                if m.source.is_dir():
                    shutil.copytree(m.source, copy, symlinks=True)
                else:
                    shutil.copy2(m.source, copy)
                out.append(("--bind", str(copy), m.target))
        yield tuple(out)


def as_planned(info: ImageInfo, plan: ImagePlan) -> ImageInfo:
    """A stored image as ``plan`` reads it: one image serves every plan of its digest (the base
    and the steps), but how each task's file was read (a ``FROM`` mapped, a ``CMD`` not run) is
    that task's own, never the deviations of whichever plan built the image first."""
    return dataclasses.replace(info, deviations=list(plan.deviations), inputs={**info.inputs, **plan.inputs})


def build(store: ImageStore, plan: ImagePlan, progress: Progress = _quiet) -> ImageInfo:
    """The image of ``plan``: from the store (one digest check) or built now."""
    digest = plan.digest
    if (info := store.get(digest)) is not None:
        return as_planned(info, plan)
    deadline = time.monotonic() + plan.timeout_s
    # the image it starts from: the Debian base, or (``extends``) the task's own image as built
    base = ensure_base(store, plan.base, plan.file, deadline, progress) if plan.parent is None else \
        build(store, plan.parent, progress)
    for op in plan.ops:  # the earlier stages it copies from, each an image of its own
        if op.stage is not None:
            build(store, op.stage, progress)
    with store.lock(digest):
        if (info := store.get(digest)) is not None:
            return as_planned(info, plan)
        work, fd = _building(store)
        log = work / LOG
        t0 = time.monotonic()
        rootfs = work / ROOTFS
        op: Op | None = None
        try:
            progress("copy", f"base {base.digest[:19]}")
            subprocess.run(["cp", "-a", "--reflink=auto", str(store.rootfs(base.digest)), str(rootfs)], check=True)
            steps.ensure_resolver(rootfs)
            log.write_text(f"### image {plan.name} over {base.ref}\n")
            # over a parent: its ENV and WORKDIR hold, and the steps run as root whatever its USER
            state: dict[str, object] = {"env": dict(base.env), "workdir": base.workdir, "user": None}
            for i, op in enumerate(plan.ops):
                progress("step", f"{i + 1}/{len(plan.ops)} {op.where}")
                _apply(op, rootfs, state, log, deadline, store)
            reproducible.scrub(rootfs)
            sha, size = rootfs_digest(rootfs)
            info = ImageInfo(digest=digest, name=plan.name, kind="image", rootfs_sha256=sha, env=dict(plan.env),
                             user=plan.user, workdir=plan.workdir, deviations=list(plan.deviations),
                             inputs={**plan.inputs, "base": base.ref, "ops": [o.where for o in plan.ops]},
                             build_s=round(time.monotonic() - t0, 2), size_bytes=size, created_at=time.time())
            return store.commit(work, info)
        except CopyFailed as e:
            raise BuildFailed(plan.file, _line_of(op), str(e), log_tail(log), _keep_log(store, log, digest)) from None
        except steps.StepFailed as e:
            kept = _keep_log(store, log, digest)
            at = _line_of(op)
            what = ("the build ran past its build_timeout_s" if e.timed_out else
                    f"step failed (exit {e.exit_code}): {' '.join(op.argv)[:200] if op else ''}")
            raise BuildFailed(plan.file, at, what, log_tail(log), kept) from None
        except (OSError, subprocess.CalledProcessError) as e:
            raise BuildFailed(plan.file, op.where if op else "environment", f"the build broke: {e}",
                              log_tail(log), None) from None
        finally:
            os.close(fd)
            if work.exists():
                store.discard(work)


def _line_of(op: Op | None) -> str:
    """``line N`` of a Dockerfile step, else the field it came from."""
    where = op.where if op is not None else "environment"
    file_where = where.split(":", 1)
    return f"line {file_where[1]}" if len(file_where) == 2 else where


def describe(info: ImageInfo) -> str:
    return json.dumps({"image": info.ref, "kind": info.kind, "deviations": info.deviations})
