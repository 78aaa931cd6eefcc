"""What a task's own image puts within the agent's reach that its hidden tests then trust: the
static half of `assay lint` for tasks built from a Dockerfile (imported Harbor and Terminal-Bench
tasks most of all), read from the Dockerfile and the hidden test files alone, before any build.

Two shapes, both found in real task collections and in a peer's QC fixtures:

- the hidden tests *run* a program that the image copies into the task's workdir: the workdir is
  the agent's workspace, so the agent can rewrite the grader (``verifier_program_writable``);
- the hidden tests *read* (or run) a file that the image writes outside the workdir, outside the
  verifier's own folders and outside the system's: an expected value, or verifier code, baked
  into the image where the agent can read it (``hidden_readable``).

A path the tests name only as a verifier-side file (``/tests/...``, ``/logs/...``), a system file,
or a file the image puts elsewhere that the tests never name is not a finding. What a sandboxed
agent can really read is the dynamic probe's to say (`assay validate --exposure`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from assay.spec.environment_dockerfile import Dockerfile, DockerfileError, parse
from assay.spec.load import LoadedTask
from assay.spec.task_env import DEFAULT_WORKDIR
from assay.untrusted.tree import walk_untrusted
from assay.verify.lint_files import files, read_head

#: an absolute path written in a script or a test: two parts at least (``/opt/x``, not ``/``)
_ABS = re.compile(r"(?<![\w.~$/-])(/[A-Za-z0-9_.@+-]+(?:/[A-Za-z0-9_.@+-]+)+)")
#: the verifier's own folders (mounted for the verifier only) and the system's, never the task's data
VERIFIER_SIDE = ("/tests", "/logs", "/verifier", "/solution", "/oracle")
SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc", "/proc", "/sys", "/dev", "/run", "/tmp",
          "/var/lib", "/var/cache", "/var/log", "/root/.cache", "/root/.local")
#: a file the tests would run rather than read
PROGRAM_SUFFIXES = (".py", ".sh", ".bash", ".js", ".mjs", ".ts", ".pl", ".rb", ".php", ".lua")
#: a file name that says it holds the expected answer (a data file the tests merely read is the
#: task's input: 250 of TermiGen's 3,554 tasks read such files from the image, nearly all inputs)
ANSWER_NAME = re.compile(r"expected|truth|answer|golden|gold_|_gold|solution|oracle", re.IGNORECASE)
#: a file name that says it is a grader (a program the tests run from the workspace is most often
#: the agent's own work product: 266 of those tasks do, nearly all the code the agent fixes)
GRADER_NAME = re.compile(r"verif|grade|grading|judge|checker|scor(e|ing)|evaluat", re.IGNORECASE)


def _under(path: str, roots: tuple[str, ...] | list[str]) -> bool:
    return any(path == r or path.startswith(r.rstrip("/") + "/") for r in roots)


def _dockerfile(task: LoadedTask) -> Dockerfile | None:
    env = task.spec.environment
    if env is None or env.dockerfile is None:
        return None
    try:
        return parse((task.dir / env.dockerfile).resolve())
    except (DockerfileError, OSError, UnicodeDecodeError):
        return None  # the loader refuses such a task; nothing to read here


def _workdir(task: LoadedTask, df: Dockerfile) -> str:
    """Where the agent's workspace appears: the task's workdir, else the image's last WORKDIR."""
    if task.spec.workdir != DEFAULT_WORKDIR:
        return task.spec.workdir
    last = [s.dest for s in df.image_steps() if s.kind == "workdir"]
    return last[-1] if last else DEFAULT_WORKDIR


def _copied(task: LoadedTask, df: Dockerfile) -> dict[str, int]:
    """Every file path a COPY/ADD puts in the image -> its Dockerfile line."""
    env = task.spec.environment
    assert env is not None
    context = (task.dir / env.context).resolve()
    out: dict[str, int] = {}
    for step in df.image_steps():
        if step.kind != "copy":
            continue
        if step.from_stage is not None:  # a stage's files are known once it is built: its destination only
            out[os.path.normpath(step.dest)] = step.line
            continue
        into_dir = step.dest.endswith("/") or len(step.sources) > 1
        for src in step.sources:
            full = context / src
            if full.is_dir() and not full.is_symlink():
                for raw, _, st in walk_untrusted(full, max_entries=10_000):
                    if st is not None and not os.path.isdir(full / os.fsdecode(raw)):
                        out[os.path.normpath(f"{step.dest}/{os.fsdecode(raw)}")] = step.line
            else:
                dest = f"{step.dest}/{Path(src).name}" if into_dir or _is_dir_dest(step.dest, df) else step.dest
                out[os.path.normpath(dest)] = step.line
    return out


def _is_dir_dest(dest: str, df: Dockerfile) -> bool:
    """A COPY destination that names a folder the Dockerfile made (``COPY x /app``, WORKDIR /app)."""
    return any(s.kind == "workdir" and s.dest.rstrip("/") == dest.rstrip("/") for s in df.image_steps())


#: where a RUN step writes a file: a redirect, tee, or the last operand of cp/mv/install
_WRITES = re.compile(r"(?:>>?|\btee(?:\s+-a)?)\s*(/[A-Za-z0-9_.@+/-]+)"
                     r"|\b(?:cp|mv|install)(?:\s+-\S+)*(?:\s+[^\s;&|]+)+?\s+(/[A-Za-z0-9_.@+/-]+)(?=\s*(?:$|[;&|\n]))")


def _written(df: Dockerfile) -> dict[str, int]:
    """Every absolute path a RUN step writes a file to -> its Dockerfile line (a path it merely
    names, an install prefix or a tool it runs, is not one)."""
    out: dict[str, int] = {}
    for step in df.image_steps():
        if step.kind == "run":
            for m in _WRITES.finditer(" ".join(step.argv[-1:]) if step.argv[:2] == ("/bin/sh", "-c") else ""):
                out.setdefault(os.path.normpath(m.group(1) or m.group(2)), step.line)
    return out


_CHMOD = re.compile(r"\bchmod(?:\s+-[A-Za-z]+)*\s+([0-7]{3,4}|[ugoa]*[-=][rwxXst]*(?:,[ugoa]*[-+=][rwxXst]*)*)"
                    r"((?:\s+/[A-Za-z0-9_.@+/*-]+)+)")


def _unreadable_to_others(mode: str) -> bool:
    """Whether a chmod mode leaves others (every uid but the owner's and group's) no read."""
    if mode.isdigit():
        return int(mode[-1]) & 4 == 0
    return any(part.startswith(("o-", "go-", "og-", "a-", "-", "o=", "go=", "og=", "a=", "=")) and
               ("r" in part.split("-")[-1] if "-" in part else "r" not in part.split("=")[-1])
               for part in mode.split(","))


def _guarded(df: Dockerfile) -> list[str]:
    """Paths a RUN step takes read away from others: the agent runs as a uid of its own (never
    the image's root), so what the image's root keeps to itself the agent cannot read here."""
    out: list[str] = []
    for step in df.image_steps():
        if step.kind == "run" and step.argv[:2] == ("/bin/sh", "-c"):
            for m in _CHMOD.finditer(step.argv[-1]):
                if _unreadable_to_others(m.group(1)):
                    out += [os.path.normpath(t.rstrip("/*")) for t in m.group(2).split()]
    return out


def _test_refs(task: LoadedTask) -> dict[str, str]:
    """Every absolute path the hidden test files name -> the first file naming it."""
    out: dict[str, str] = {}
    for rel, full in files(task.dir / task.spec.hidden):
        for p in _ABS.findall(read_head(full)):
            out.setdefault(os.path.normpath(p), f"{task.spec.hidden}/{rel}")
    return out


def image_exposures(task: LoadedTask) -> dict[str, list[tuple[str, str]]]:
    """Findings by rule (``verifier_program_writable``, ``hidden_readable``): (where, detail);
    also a reference solution's answer the image copies into the workspace."""
    out: dict[str, list[tuple[str, str]]] = {"verifier_program_writable": [], "hidden_readable": []}
    df = _dockerfile(task)
    if df is None:
        return out
    refs = _test_refs(task)
    workdir = _workdir(task, df)
    prompt = task.prompt
    copied, written, guarded = _copied(task, df), _written(df), _guarded(df)
    name = task.spec.environment.dockerfile if task.spec.environment else "Dockerfile"
    out["hidden_readable"] += _answer_in_workspace(task, workdir, copied, name)
    for path, test_file in sorted(refs.items()):
        if _under(path, VERIFIER_SIDE) or _under(path, SYSTEM) or os.path.basename(path) in prompt:
            continue  # the verifier's own, the system's, or a file the instruction hands the agent
        if _under(path, [workdir]):
            if path in copied and path.endswith(PROGRAM_SUFFIXES) and GRADER_NAME.search(os.path.basename(path)):
                out["verifier_program_writable"].append(
                    (test_file, f"the hidden tests run {path}, which the image copies into the workspace the agent "
                                f"writes ({name} line {copied[path]}): the agent can rewrite the grader"))
            continue
        line = copied.get(path) or written.get(path)
        program = path.endswith(PROGRAM_SUFFIXES)
        named = (GRADER_NAME if program else ANSWER_NAME).search(os.path.basename(path))
        if line is not None and named and not _under(path, guarded):
            what = "run" if program else "read"  # verifier code, or an expected value
            out["hidden_readable"].append(
                (test_file, f"the hidden tests {what} {path}, which the image writes outside the workspace where the "
                            f"agent can read it ({name} line {line}): move it under the hidden tests"))
    return out


def _answer_in_workspace(task: LoadedTask, workdir: str, copied: dict[str, int], name: str) -> list[tuple[str, str]]:
    """A file the image copies into the workspace under an answer's name that the reference
    solution reads and the instruction never mentions: the solution shipped to the agent (a real
    Terminal-Bench 1 adaptation keeps its oracle's encrypted payload in ``/app/.oracle``, the
    password a default every copy of the benchmark prints)."""
    if task.spec.solution is None:
        return []
    solution = read_head(task.dir / task.spec.solution)
    for path in sorted(copied):
        if not _under(path, [workdir]):
            continue
        for part in Path(path).relative_to(workdir).parts:
            if ANSWER_NAME.search(part) and part in solution and part not in task.prompt:
                return [(task.spec.solution, f"the reference solution reads {path}, an answer the image copies into "
                                             f"the agent's workspace ({name} line {copied[path]}): keep it with the "
                                             "solution, out of the image")]
    return []


__all__ = ["image_exposures"]
