"""A Dockerfile read as a Dockerfile: the instructions assay honours, each with its line.

``FROM`` (with ``--platform=`` where it names this machine's platform, ``$BUILDPLATFORM`` and
``$TARGETPLATFORM`` included), ``RUN`` (shell and exec form, line continuations, BuildKit's
heredocs: ``RUN <<EOF`` and ``RUN cat > f <<'EOF'``), ``COPY``/``ADD`` of local files,
``WORKDIR``, ``ENV``, ``ARG`` and ``USER``. What only says how a container of the image would be
started or labelled (``CMD``, ``EXPOSE``, ``LABEL``, ``HEALTHCHECK``, ``STOPSIGNAL``, ``MAINTAINER``)
builds nothing and is not applied, as under Harbor and Terminal-Bench, which start every task
container with their own command: each is named with its line among the image's deviations.
Anything else (``ENTRYPOINT``, ``SHELL``, ``VOLUME``, ``ADD`` of a URL, a second ``FROM``,
``COPY --from``) is refused when the task loads, naming the file, the line and the instruction,
never skipped.
"""

from __future__ import annotations

import dataclasses
import json
import platform
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from assay.spec.dockerfile_copy import copy_step
from assay.spec.dockerfile_parts import DockerfileError, Instruction, LineError, Step, substitute
from assay.spec.dockerfile_run_flags import split_flags
from assay.spec.dockerfile_stages import Stage, stage_name

HONOURED = ("FROM", "RUN", "COPY", "ADD", "WORKDIR", "ENV", "ARG", "USER")
#: instructions that build nothing and are not applied here, each with why (said as a deviation)
NOT_APPLIED = {
    "CMD": "not run: assay runs the agent, never the image's command (Harbor and Terminal-Bench override it too)",
    "EXPOSE": "not applied: metadata only (no port is published here)",
    "LABEL": "not applied: metadata only",
    "MAINTAINER": "not applied: metadata only",
    "STOPSIGNAL": "not applied: the harness ends the sandbox's processes itself",
    "HEALTHCHECK": "not run: the image starts no service here to check",
}
#: the WORKDIR a benchmark's own base image sets, which its tasks rely on (a relative COPY, an
#: oracle writing /app/...): Terminal-Bench's two bases, used by Terminal-Bench 1 and Harbor tasks
BASE_IMAGE_WORKDIR = ((re.compile(r"^ghcr\.io/laude-institute/t-bench/(python-3-13|ubuntu-24-04)(:|@|$)"), "/app"),)
#: the environment a base image brings (Debian's, Ubuntu's and Python's images all set this PATH)
BASE_IMAGE_ENV = (("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),)
_HEREDOC = re.compile(r"^<<(-?)(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2\s*$")
#: a heredoc opened inside a RUN command (``cat > f <<'EOF'``); ``<<<`` (a here-string) is not one
_INNER_HEREDOC = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([A-Za-z_][A-Za-z0-9_]*)\2")


#: this machine's architecture in Docker's and OCI's spelling (the image config's too: environments/oci.py)
ARCH = {"x86_64": "amd64", "amd64": "amd64", "aarch64": "arm64", "arm64": "arm64", "armv7l": "arm", "ppc64le": "ppc64le",
         "s390x": "s390x", "riscv64": "riscv64"}


def host_platform() -> str:
    """This machine's platform in Docker's spelling (``linux/amd64``): the only one assay builds."""
    return f"linux/{host_arch()}"


def host_arch() -> str:
    """This machine's architecture as Docker and OCI name it (``amd64``)."""
    return ARCH.get(platform.machine(), platform.machine())


def _platform_scope() -> dict[str, str]:
    """Docker's build-time platform variables, which it predefines for FROM lines."""
    host = host_platform()
    os_, arch = host.split("/", 1)
    return {"BUILDPLATFORM": host, "TARGETPLATFORM": host, "BUILDOS": os_, "TARGETOS": os_, "BUILDARCH": arch,
            "TARGETARCH": arch}


@dataclass(frozen=True)
class Dockerfile:
    """A parsed Dockerfile: its ``FROM`` and its steps in order."""

    path: Path
    from_image: str
    from_line: int
    steps: tuple[Step, ...] = field(default_factory=tuple)
    platform: str = ""  # FROM's --platform, when given (always this machine's: another is refused)
    not_applied: tuple[str, ...] = ()  # the NOT_APPLIED lines, each named with its line and why
    stages: tuple[Stage, ...] = ()  # the earlier stages of a multi-stage build (the image is the last)
    from_stage: int | None = None  # the earlier stage the image is ``FROM`` (``from_image`` its chain's image)

    def chain_of(self, from_stage: int | None) -> list[Stage]:
        """The earlier stages a stage ``FROM`` ``from_stage`` starts from, the first one's first."""
        chain: list[Stage] = []
        while from_stage is not None:
            chain.append(self.stages[from_stage])
            from_stage = self.stages[from_stage].from_stage
        return chain[::-1]

    def image_steps(self) -> tuple[Step, ...]:
        """The steps that make the image: those of the earlier stages it starts ``FROM``, then its own."""
        return tuple(s for stage in self.chain_of(self.from_stage) for s in stage.steps) + self.steps

    def every_step(self) -> tuple[Step, ...]:
        """Every stage's steps, the image's last (what any stage copies or says)."""
        return tuple(s for stage in self.stages for s in stage.steps) + self.steps


def instructions(path: Path, text: str) -> list[Instruction]:
    """Split ``text`` into instructions: comments and blank lines dropped, ``\\`` continuations
    joined, a ``RUN <<EOF`` heredoc's body kept, a RUN command's own heredocs kept in its script."""
    lines = text.splitlines()
    out: list[Instruction] = []
    i = 0
    while i < len(lines):
        raw = lines[i]
        start = i + 1
        i += 1
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        body = raw
        while body.rstrip().endswith("\\") and i < len(lines):
            nxt = lines[i]
            i += 1
            if nxt.lstrip().startswith("#"):
                continue
            body = body.rstrip()[:-1] + " " + nxt.strip()
        if body.rstrip().endswith("\\"):
            body = body.rstrip()[:-1]
        keyword, _, args = body.strip().partition(" ")
        args = args.strip()
        heredoc = None
        m = _HEREDOC.match(args)
        if m:
            doc, i = _heredoc_body(path, start, lines, i, m.group(3), m.group(1) == "-")
            heredoc = "\n".join(doc) + "\n"
        elif keyword.upper() == "RUN" and _INNER_HEREDOC.search(args):
            # BuildKit's form: the heredocs' bodies follow the line, and the command with its bodies
            # and end words goes to the shell as one script (the shell expands or not, as quoted)
            script = [args]
            for inner in _INNER_HEREDOC.finditer(args):
                doc, i = _heredoc_body(path, start, lines, i, inner.group(3), inner.group(1) == "-")
                script += [*doc, inner.group(3)]
            args = "\n".join(script)
        out.append(Instruction(keyword.upper(), args, start, heredoc))
    return out


def _heredoc_body(path: Path, start: int, lines: list[str], i: int, word: str, strip: bool) -> tuple[list[str], int]:
    """The body of heredoc ``word`` from ``lines[i]`` on (leading tabs dropped for ``<<-``) and
    the index after its end line."""
    doc: list[str] = []
    while i < len(lines) and (lines[i].lstrip("\t") if strip else lines[i]) != word:
        doc.append(lines[i].lstrip("\t") if strip else lines[i])
        i += 1
    if i >= len(lines):
        raise DockerfileError(path, start, f"heredoc <<{word} is never closed", f"end it with a line {word}")
    return doc, i + 1


def _pairs(ins: Instruction, path: Path, scope: dict[str, str]) -> list[tuple[str, str]]:
    """``ENV``/``ARG`` arguments: ``K=V K2="V 2"`` or the old ``K V`` form."""
    try:
        words = shlex.split(ins.args)
    except ValueError as e:
        raise DockerfileError(path, ins.line, f"{ins.keyword} {ins.args!r}: {e}", "fix the quoting") from e
    if not words:
        raise DockerfileError(path, ins.line, f"{ins.keyword} without a name", "write NAME=value")
    if "=" not in words[0] and ins.keyword == "ENV":
        return [(words[0], substitute(ins.args.split(None, 1)[1] if len(words) > 1 else "", scope))]
    out = []
    for w in words:
        name, eq, value = w.partition("=")
        if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", name) or (ins.keyword == "ENV" and not eq):
            raise DockerfileError(path, ins.line, f"{ins.keyword} {w!r} is not NAME=value", "write NAME=value")
        out.append((name, substitute(value, scope) if eq else scope.get(name, "")))
    return out


def _run(ins: Instruction, path: Path, args: dict[str, str], scope: dict[str, str], workdir: str) -> Step:
    if ins.args.startswith("--"):
        try:
            flags = split_flags(_flag_words(ins.args, scope), workdir)
        except LineError as e:
            raise DockerfileError(path, ins.line, e.message, e.fix) from None
        first, nl, later = flags.command.partition("\n")
        heredoc = ins.heredoc
        if (m := _HEREDOC.match(first)) and later:  # ``RUN --mount=... <<EOF``: the body is the script
            body = later.split("\n")
            heredoc = "\n".join(body[:-1]) + "\n" if body[-1] == m.group(3) else later + "\n"
            first, nl, later = "", "", ""
        step = _run(Instruction(ins.keyword, first + nl + later, ins.line, heredoc), path, args, scope, workdir)
        return dataclasses.replace(step, network=flags.network, mounts=flags.mounts)
    env = tuple(args.items())
    if ins.heredoc is not None:
        if ins.heredoc.startswith("#!"):  # BuildKit runs such a body as a script, by its own #! line
            return Step("run", ins.line, argv=("/bin/sh", "-c", _script_by_shebang(ins.heredoc)), env=env)
        return Step("run", ins.line, argv=("/bin/sh", "-c", ins.heredoc), env=env)
    if ins.args.startswith("["):
        try:
            argv = json.loads(ins.args)
        except ValueError:
            argv = None  # not JSON: Docker reads the line as the shell form (``RUN [ -e x ] && ...``)
        if isinstance(argv, list) and argv and all(isinstance(a, str) for a in argv):
            return Step("run", ins.line, argv=tuple(argv), env=env)
        if argv is not None:
            raise DockerfileError(path, ins.line, "RUN exec form is not a JSON list of strings", "fix the list")
    if not ins.args:
        raise DockerfileError(path, ins.line, "RUN without a command", "write the command")
    return Step("run", ins.line, argv=("/bin/sh", "-c", ins.args), env=env)


def _no_entrypoint(args: str) -> bool:
    """``ENTRYPOINT []`` (or ``[""]``): Docker's way to clear an entrypoint, which assay never runs."""
    try:
        return json.loads(args) in ([], [""])
    except ValueError:
        return False


def _flag_words(args: str, scope: dict[str, str]) -> str:
    """``args`` with the variables of its leading flags substituted (BuildKit expands them there;
    the command after them is the shell's to expand)."""
    first, nl, later = args.partition("\n")
    words = first.split(" ")
    n = 0
    while n < len(words) and (words[n].startswith("--") or words[n] == ""):
        n += 1
    return " ".join([substitute(w, scope) for w in words[:n]] + words[n:]) + nl + later


def _script_by_shebang(body: str) -> str:
    """A shell command that writes ``body`` to a fresh file and runs it by its ``#!`` line."""
    end = "ASSAY_HEREDOC_END"
    while end in body:
        end += "_"
    return (f'f=$(mktemp) && cat > "$f" <<\'{end}\'\n{body}{end}\n'
            'chmod +x "$f" && "$f"; rc=$?; rm -f "$f"; exit $rc')


def parse(path: Path, text: str | None = None) -> Dockerfile:
    """Read ``path`` as a Dockerfile; :class:`DockerfileError` on the first line assay cannot honour."""
    text = path.read_text(encoding="utf-8") if text is None else text
    # ARGs and ENVs seen so far, for substitution, over what every base image assay builds sets
    # (``ENV PATH=/opt/venv/bin:$PATH`` keeps the system's PATH, as Docker's does)
    scope: dict[str, str] = dict(BASE_IMAGE_ENV)
    args: dict[str, str] = {}  # ARGs in scope: the environment of later RUN steps
    workdir = "/"
    from_image, from_line, plat = "", 0, ""
    steps: list[Step] = []
    not_applied: list[str] = []
    # a multi-stage build: the stages closed so far, their names, and each one's scope and workdir
    # at its end (a stage FROM it starts there); the ARGs before the first FROM stay in scope
    stages: list[Stage] = []
    names: dict[str, int] = {}
    ends: list[tuple[dict[str, str], str]] = []
    name, from_stage, global_scope = "", None, scope
    for ins in instructions(path, text):
        kw = ins.keyword
        if kw in NOT_APPLIED and from_image:
            not_applied.append(f"{path.name}:{ins.line}: {kw} {NOT_APPLIED[kw]}")
            continue
        if kw == "ENTRYPOINT" and from_image and _no_entrypoint(ins.args):
            not_applied.append(f"{path.name}:{ins.line}: ENTRYPOINT {ins.args} not applied: it clears the base "
                               "image's entrypoint, and assay runs none (as under Harbor with it)")
            continue
        if kw not in HONOURED:
            raise DockerfileError(path, ins.line, f"instruction {kw} is not honoured by assay's builder",
                                  f"remove it; assay honours {', '.join(HONOURED)}")
        if not from_image and kw not in ("FROM", "ARG"):
            raise DockerfileError(path, ins.line, f"{kw} before FROM", "start the Dockerfile with FROM")
        if kw == "FROM":
            if from_image:  # the stage so far is an earlier stage of a multi-stage build
                stages.append(Stage(name, from_image, from_line, tuple(steps), plat, from_stage))
                if name:
                    names[name] = len(stages) - 1
                ends.append((scope, workdir))
                steps, plat, args = [], "", {}  # a stage's ARGs are its own
            else:
                global_scope = dict(scope)
            words = substitute(ins.args, {**_platform_scope(), **global_scope}).split()
            while words and words[0].startswith("--"):
                flag, _, value = words.pop(0).partition("=")
                if flag != "--platform" or not value:
                    raise DockerfileError(path, ins.line, f"FROM flag {flag} is not honoured",
                                          "drop the flag (FROM honours --platform=PLATFORM only)")
                want = "/".join(value.lower().split("/")[:2])  # a variant (linux/arm64/v8) is the arch's
                if want != host_platform():
                    raise DockerfileError(path, ins.line, f"FROM --platform={value}: this machine builds "
                                          f"{host_platform()} images only (no emulation)",
                                          f"build on a {want} machine, or drop the flag if the image is portable")
                plat = want
            if not words:
                raise DockerfileError(path, ins.line, f"FROM {ins.args!r} is not FROM [--platform=P] IMAGE [AS NAME]",
                                      "write FROM IMAGE")
            try:
                name = stage_name(words, ins.args, names)
            except LineError as e:
                raise DockerfileError(path, ins.line, e.message, e.fix) from None
            from_image, from_line = words[0], ins.line
            from_stage = names.get(from_image.lower())
            if from_stage is not None:  # FROM an earlier stage: its image, scope and workdir go on
                from_image = stages[from_stage].from_image
                scope, workdir = dict(ends[from_stage][0]), ends[from_stage][1]
                continue
            scope, workdir = dict(global_scope), "/"
            for pattern, base_workdir in BASE_IMAGE_WORKDIR:
                if pattern.match(from_image):
                    workdir = base_workdir
                    steps.append(Step("workdir", ins.line, dest=workdir,
                                      deviation=f"{path.name}:{ins.line}: FROM {from_image} sets WORKDIR {workdir}; "
                                      "kept, as that image sets it"))
        elif kw == "ARG":
            for k, v in _pairs(ins, path, scope):
                args[k] = scope[k] = v
        elif kw == "ENV":
            pairs = _pairs(ins, path, scope)
            scope.update(pairs)
            steps.append(Step("env", ins.line, env=tuple(pairs)))
        elif kw == "RUN":
            steps.append(_run(ins, path, args, scope, workdir))
        elif kw in ("COPY", "ADD"):
            steps.append(copy_step(ins, path, scope, workdir, names, len(stages)))
        elif kw == "WORKDIR":
            target = substitute(ins.args.strip().strip('"'), scope)
            if not target:
                raise DockerfileError(path, ins.line, "WORKDIR without a path", "write WORKDIR /path")
            workdir = target if target.startswith("/") else f"{workdir.rstrip('/')}/{target}"
            steps.append(Step("workdir", ins.line, dest=workdir))
        elif kw == "USER":
            user = substitute(ins.args.strip(), scope)
            if not user or " " in user:
                raise DockerfileError(path, ins.line, f"USER {ins.args!r} is not one user name or uid", "write USER name")
            steps.append(Step("user", ins.line, dest=user))
    if not from_image:
        raise DockerfileError(path, 1, "no FROM instruction", "start the Dockerfile with FROM")
    return Dockerfile(path, from_image, from_line, tuple(steps), platform=plat, not_applied=tuple(not_applied),
                      stages=tuple(stages), from_stage=from_stage)


__all__ = ["BASE_IMAGE_ENV", "Dockerfile", "DockerfileError", "Instruction", "Step", "host_arch", "host_platform",
           "instructions", "parse", "substitute"]
