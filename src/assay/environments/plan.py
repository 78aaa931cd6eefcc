"""What an image is built from, as data: its Debian base, its steps, its digest.

The digest covers the base (release, packages, the Debian sources used), every step in order and
the content of every file a step copies; nothing else (not the task folder's path, not the
time). Equal inputs name the same image wherever they are declared.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
from dataclasses import dataclass, field
from pathlib import Path

from assay.spec.digest import sha256_file, sha256_json
from assay.environments import releases, stage_release
from assay.spec.environment import DEBIAN_RELEASES, EnvironmentSpec
from assay.spec.dockerfile_parts import Mount
from assay.spec.dockerfile_stages import Stage
from assay.spec.environment_dockerfile import BASE_IMAGE_ENV, Dockerfile, DockerfileError, parse
from assay.untrusted.rooted import matches, resolve_in

BUILDER_VERSION = 6  # 5: a base from its own release's suites; 6: its Python packages replaceable by pip
#: always in a base: the verifier runs hidden tests with the image's own python3 and pytest
VERIFIER_PACKAGES = ("python3", "python3-pytest", "ca-certificates")
#: a ``FROM`` of a Python image maps to Debian's python with these
PYTHON_PACKAGES = ("python3", "python3-pip", "python3-venv")
#: and what else Python's own images carry: the headers a C extension builds against (Python.h)
PYTHON_IMAGE_PACKAGES = (*PYTHON_PACKAGES, "python3-dev")
#: a ``FROM`` of a language's official image (its name, the last part of the path, without the tag)
#: maps to Debian's packages of that language, installed as the image's first step, and the
#: language named in the deviation (its version may differ)
RUNTIME_IMAGES: dict[str, tuple[tuple[str, ...], str]] = {
    "node": (("nodejs", "npm"), "Node.js"),
    "golang": (("golang-go",), "Go"),
    "rust": (("rustc", "cargo"), "Rust"),
    "openjdk": (("default-jdk-headless",), "Java"),
    "eclipse-temurin": (("default-jdk-headless",), "Java"),
    "amazoncorretto": (("default-jdk-headless",), "Java"),
    "ruby": (("ruby",), "Ruby"),
    "php": (("php-cli",), "PHP"),
}
#: every base of one release holds exactly these, so every image of that release (every example
#: suite's, every imported task's) shares ONE base, built once per store; a task's own packages
#: are an apt step on top (:func:`apt_step`)
BASE_PACKAGES = tuple(sorted({*VERIFIER_PACKAGES, *PYTHON_PACKAGES}))
#: the host's Debian sources, reused by the base and by apt inside every step
SOURCES = (Path("/etc/apt/sources.list.d/debian.sources"), Path("/etc/apt/sources.list"))
APT_CONF = Path("/etc/apt/apt.conf.d")


@dataclass(frozen=True)
class Op:
    """One build step: ``run`` (argv), ``copy`` (host sources -> dest), ``env``, ``workdir``, ``user``."""

    kind: str
    where: str  # "Dockerfile:12" or "environment.steps[2]": what a failure names
    argv: tuple[str, ...] = ()
    sources: tuple[Path, ...] = ()
    dest: str = ""
    env: tuple[tuple[str, str], ...] = ()
    network: bool = True  # run: False for a step with a loopback only
    mounts: tuple[OpMount, ...] = ()  # run: BuildKit's --mount= of that step
    stage: ImagePlan | None = None  # copy: ``COPY --from=STAGE``, the plan of that stage's image
    stage_sources: tuple[str, ...] = ()  # copy from a stage: absolute paths inside its image

    def key(self) -> dict[str, object]:
        """What of this step enters the digest (copied files by content, not by host path); the
        network and mounts only when set, so every image built before them keeps its digest."""
        if self.stage is not None:  # what a stage's image holds is its plan's digest
            return {"kind": self.kind, "stage": self.stage.digest, "paths": list(self.stage_sources), "dest": self.dest}
        key: dict[str, object] = {"kind": self.kind, "argv": list(self.argv), "dest": self.dest,
                                  "env": [list(p) for p in self.env],
                                  "sources": [{"name": s.name, "sha256": tree_sha(s)} for s in self.sources]}
        if not self.network:
            key["network"] = False
        if self.mounts:
            key["mounts"] = [{"kind": m.kind, "target": m.target, "rw": m.rw,
                              "source": None if m.source is None else {"name": m.source.name, "sha256": tree_sha(m.source)}}
                             for m in self.mounts]
        return key


@dataclass(frozen=True)
class OpMount:
    """A RUN step's mount: ``kind`` cache or tmpfs (an empty folder, thrown away) or bind (``source``,
    a host path inside the build context; read-only unless ``rw``, whose writes are thrown away)."""

    kind: str
    target: str
    source: Path | None = None
    rw: bool = False


@dataclass(frozen=True)
class BasePlan:
    release: str
    packages: tuple[str, ...]

    @property
    def digest(self) -> str:
        return "sha256:" + sha256_json({"builder": BUILDER_VERSION, "release": self.release, "variant": "apt",
                                        "packages": sorted(self.packages), "sources": host_sources_sha()})

    @property
    def name(self) -> str:
        return f"base-{self.release}"


@dataclass(frozen=True)
class ImagePlan:
    """A task's image: its base, its steps, its declared runtime facts and its deviations."""

    name: str
    base: BasePlan
    ops: tuple[Op, ...]
    file: Path  # what to name when the build fails (task.yaml or the Dockerfile)
    timeout_s: float
    deviations: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # the image's ENV at the end
    user: str | None = None
    workdir: str | None = None
    inputs: dict[str, object] = field(default_factory=dict)
    parent: ImagePlan | None = None  # built over that image instead of ``base`` (``extends: environment``)

    @property
    def digest(self) -> str:
        key: dict[str, object] = {"builder": BUILDER_VERSION, "base": self.base.digest,
                                  "ops": [o.key() for o in self.ops]}
        if self.parent is not None:  # only then, so every other image keeps its digest
            key["parent"] = self.parent.digest
        return "sha256:" + sha256_json(key)


def apt_step(packages: set[str] | tuple[str, ...], where: str) -> list[Op]:
    """The declared Debian packages the shared base lacks, installed as the image's first step
    (none: no step, so an image of only base packages is the base plus its own steps)."""
    extra = sorted(set(packages) - set(BASE_PACKAGES))
    if not extra:
        return []
    return [Op("run", where, argv=("/bin/sh", "-c", "apt-get update -qq && DEBIAN_FRONTEND=noninteractive "
                                   "apt-get install -y -qq --no-install-recommends " + " ".join(extra)))]


def tree_sha(path: Path) -> str:
    """Content digest of a copied file or folder (names, modes' exec bit and bytes)."""
    if path.is_file():
        return f"{sha256_file(path)}:{os.access(path, os.X_OK):d}"
    h = hashlib.sha256()
    for p in sorted(path.rglob("*")):
        rel = p.relative_to(path).as_posix()
        if p.is_symlink():
            h.update(f"L {rel} {os.readlink(p)}\n".encode())
        elif p.is_file():
            h.update(f"F {rel} {tree_sha(p)}\n".encode())
        else:
            h.update(f"D {rel}\n".encode())
    return h.hexdigest()


def host_sources_sha() -> str:
    """Digest of the Debian sources and apt options the builder reuses from the host."""
    parts = {str(p): sha256_file(p) for p in SOURCES if p.is_file()}
    return sha256_json(parts)


def python_image(image: str) -> bool:
    """Whether ``image`` is a Python image (``python:3.12-slim``, a registry's copy of it, a
    benchmark's ``python-3-13`` base): its ``python`` command is part of what it promises."""
    name = image.split("@")[0]
    return name.split(":")[0] in ("python", "docker.io/library/python") or "python" in name.rsplit("/", 1)[-1]


#: Python's images answer to ``python`` (Debian's python-is-python3 is this link), and carry no
#: EXTERNALLY-MANAGED marker, so ``pip install`` works there (for a user who cannot write the
#: system's packages, into the user site)
PYTHON_ALIAS = ("/bin/sh", "-c", "[ -e /usr/bin/python ] || ln -s python3 /usr/bin/python; "
                "rm -f /usr/lib/python3*/EXTERNALLY-MANAGED")
#: Go's official image: a whole Go tree at /usr/local/go, GOPATH=/go on the PATH, no toolchain
#: download (what multi-stage builds copy: ``COPY --from=builder /usr/local/go /usr/local/go``,
#: ``/go/pkg/mod``). Debian's tree links its sources to /usr/share/go-*, which a copy would leave
#: dangling, so /usr/local/go is that tree with every link followed, as hard links (no extra space)
GO_LAYOUT = ("/bin/sh", "-c", "mkdir -p /usr/local /go/bin /go/src && rm -rf /usr/local/go && "
             "cp -rLl /usr/lib/go/. /usr/local/go")
GO_ENV = (("GOPATH", "/go"), ("GOTOOLCHAIN", "local"),
          ("PATH", "/go/bin:/usr/local/go/bin:" + dict(BASE_IMAGE_ENV)["PATH"]))
#: Rust's official image: CARGO_HOME=/usr/local/cargo with its bin first on the PATH (where a
#: Dockerfile's ``cargo install`` puts a tool every user finds), cargo and rustc named there too
RUST_LAYOUT = ("/bin/sh", "-c", "mkdir -p /usr/local/cargo/bin /usr/local/rustup && for t in cargo rustc rustdoc; "
               "do ln -sf /usr/bin/$t /usr/local/cargo/bin/$t; done")
RUST_ENV = (("CARGO_HOME", "/usr/local/cargo"), ("RUSTUP_HOME", "/usr/local/rustup"),
            ("PATH", "/usr/local/cargo/bin:" + dict(BASE_IMAGE_ENV)["PATH"]))
#: the official layouts kept, by image name: the step that makes it and the ENV it sets
LAYOUTS = {"golang": (GO_LAYOUT, GO_ENV), "rust": (RUST_LAYOUT, RUST_ENV)}
#: how each layout is said in the mapping
_LAYOUT_SAID = {"golang": " as a whole tree at /usr/local/go, GOPATH=/go, as Go's image",
                "rust": ", CARGO_HOME=/usr/local/cargo on the PATH, as Rust's image"}


def _short_name(image: str) -> str:
    """An image's name without its registry, path, tag and digest (``golang``)."""
    return image.split("@")[0].rsplit("/", 1)[-1].split(":")[0]


def map_from(image: str, env: EnvironmentSpec) -> tuple[str, tuple[str, ...], str | None]:
    """The Debian release a ``FROM`` becomes, the packages it adds, and the deviation (None: exact).
    A language's image gets the release whose Debian package of it matches its version
    (:mod:`assay.environments.releases`); another system's image, the declared ``base``."""
    fallback = env.release()
    short = _short_name(image)
    if short == "debian" and (debian := releases.debian_tag(image))[0] in DEBIAN_RELEASES:
        own, exact = debian
        return own, (), None if exact else f"FROM {image} read as debian:{own}"
    if python_image(image):
        choice = releases.choose(image, "Python", fallback)
        return choice.release, PYTHON_IMAGE_PACKAGES, (f"FROM {image} mapped to debian:{choice.release} with Debian's "
                                                       f"{', '.join(PYTHON_IMAGE_PACKAGES)}, `python` as python3 and no "
                                                       f"EXTERNALLY-MANAGED marker, as Python's image ({choice.said})")
    if short in RUNTIME_IMAGES:
        packages, language = RUNTIME_IMAGES[short]
        choice = releases.choose(image, language, fallback)
        layout = _LAYOUT_SAID.get(short, "")
        return choice.release, packages, (f"FROM {image} mapped to debian:{choice.release} with Debian's "
                                          f"{', '.join(packages)}{layout} ({choice.said})")
    return fallback, (), f"FROM {image} mapped to debian:{fallback} (that image cannot be fetched here)"



def _from_dockerfile(name: str, task_dir: Path, env: EnvironmentSpec) -> ImagePlan:
    assert env.dockerfile is not None
    path = (task_dir / env.dockerfile).resolve()
    df: Dockerfile = parse(path)
    context = (task_dir / env.context).resolve()
    final = Stage("", df.from_image, df.from_line, df.steps, df.platform, df.from_stage)
    plan = _stage_plan(name, df, final, _StageRead(context, path, env, {}), final=True)
    plan, moved = stage_release.one_release(plan, releases.newest(stage_release.releases_of(plan)))
    plan = stage_release.with_successors(plan)
    return dataclasses.replace(plan, deviations=(*plan.deviations, *[m for m in moved if m not in plan.deviations],
                                                 *df.not_applied))


@dataclass(frozen=True)
class _StageRead:
    """What every stage of one Dockerfile is read with, and the stage plans made so far."""

    context: Path
    path: Path
    env: EnvironmentSpec
    plans: dict[int, ImagePlan]


def _stage_plan(name: str, df: Dockerfile, stage: Stage, read: _StageRead, final: bool = False) -> ImagePlan:
    """One stage's image: the image its ``FROM`` chain starts from, the chain's steps, its own; a
    ``COPY --from`` names the plan of that stage (built first, by its own digest)."""
    chain = [*df.chain_of(stage.from_stage), stage]
    root, path, context = chain[0], read.path, read.context
    release, extra, deviation = map_from(root.from_image, read.env)
    ops: list[Op] = apt_step(extra, f"{path.name}:{root.from_line}")
    state_env: dict[str, str] = {}
    if python_image(root.from_image):
        ops.append(Op("run", f"{path.name}:{root.from_line}", argv=PYTHON_ALIAS))
    elif (layout := LAYOUTS.get(_short_name(root.from_image))) is not None:
        ops += [Op("run", f"{path.name}:{root.from_line}", argv=layout[0]),
                Op("env", f"{path.name}:{root.from_line}", env=layout[1])]
        state_env.update(layout[1])
    user = workdir = None
    deviations = [deviation] if deviation else []
    for s in (s for st in chain for s in st.steps):
        where = f"{path.name}:{s.line}"
        if s.kind == "copy" and s.from_stage is not None:
            sub = read.plans.get(s.from_stage)
            if sub is None:
                earlier = df.stages[s.from_stage]
                sub = read.plans[s.from_stage] = _stage_plan(f"{name}@{earlier.name or s.from_stage}", df, earlier, read)
            ops.append(Op("copy", where, dest=s.dest, stage=sub, stage_sources=s.sources))
            deviations += [d for d in sub.deviations if d not in deviations]
        elif s.kind == "copy":
            ops.append(Op("copy", where, sources=_context_sources(context, s.sources, path, s.line), dest=s.dest))
        elif s.kind == "run":
            ops.append(Op("run", where, argv=s.argv, env=s.env, network=s.network,
                          mounts=tuple(_mount(m, context, path, s.line) for m in s.mounts)))
            if s.deviation:
                deviations.append(s.deviation)
        elif s.kind == "env":
            state_env.update(s.env)
            ops.append(Op("env", where, env=s.env))
        elif s.kind == "workdir":
            workdir = s.dest
            ops.append(Op("workdir", where, dest=s.dest))
            if s.deviation:
                deviations.append(s.deviation)
        elif s.kind == "user":
            user = s.dest
            ops.append(Op("user", where, dest=s.dest))
    if final and user not in (None, "root", "0"):
        deviations.append(f"USER {user}: the agent runs as the sandbox's own unprivileged uid with that user's "
                          "name and home")
    return ImagePlan(name, BasePlan(release, BASE_PACKAGES), tuple(ops), path,
                     read.env.build_timeout_s, tuple(deviations), tuple(state_env.items()), user, workdir,
                     {"dockerfile": path.name, "from": root.from_image})


def _context_sources(context: Path, sources: tuple[str, ...], dockerfile: Path, line: int) -> tuple[Path, ...]:
    """What a COPY's sources name in the build context, resolved inside it (a glob matches)."""
    found: list[Path] = []
    for src in sources:
        hits = matches(context, src)
        if not hits:
            raise DockerfileError(dockerfile, line, f"COPY source {src!r} not found in the build context {context}",
                                  "put the file there or fix the path")
        found += hits
    return tuple(found)


def _mount(m: Mount, context: Path, dockerfile: Path, line: int) -> OpMount:
    """A step's mount with its bind source found in the build context (never outside it)."""
    if m.kind != "bind":
        return OpMount(m.kind, m.target)
    source = resolve_in(context, m.source)  # the one resolver of context paths, as COPY's sources
    if source is None:
        raise DockerfileError(dockerfile, line, f"--mount source {m.source!r} is not in the build context "
                              "(resolved inside it)", "add it, or fix the path")
    return OpMount("bind", m.target, source, m.rw)


def _declared_ops(env: EnvironmentSpec, field: str = "environment") -> list[Op]:
    """The steps of a declared environment: its packages, its pip requirements, its shell steps, its ENV."""
    ops: list[Op] = apt_step(tuple(env.packages), f"{field}.packages")
    if env.pip:
        ops.append(Op("run", f"{field}.pip", argv=("python3", "-m", "pip", "install", "--no-cache-dir",
                                                   "--break-system-packages", *env.pip)))
    ops += [Op("run", f"{field}.steps[{i}]", argv=("/bin/sh", "-c", s)) for i, s in enumerate(env.steps)]
    if env.env:
        ops.append(Op("env", f"{field}.env", env=tuple(sorted(env.env.items()))))
    return ops


def extension_plan(name: str, parent: ImagePlan, env: EnvironmentSpec, file: Path) -> ImagePlan:
    """A verifier's image over the task's own (``extends: environment``): ``parent`` as built, then
    ``env``'s packages, pip and steps, as root (the parent's USER, WORKDIR and ENV kept after them).
    What a test script installs before its tests (gcc, pytest's plugins) is the verifier's alone."""
    return ImagePlan(name, parent.base, tuple(_declared_ops(env, "verifier_environment")), file,
                     env.build_timeout_s, parent.deviations, (*parent.env, *sorted(env.env.items())), parent.user,
                     parent.workdir,
                     {"extends": parent.name, "packages": list(env.packages), "pip": list(env.pip)}, parent)


def _from_steps(name: str, task_dir: Path, env: EnvironmentSpec, file: Path) -> ImagePlan:
    ops = _declared_ops(env)
    return ImagePlan(name, BasePlan(env.release(), BASE_PACKAGES), tuple(ops), file, env.build_timeout_s,
                     (), tuple(sorted(env.env.items())), None, None,
                     {"base": env.base, "packages": list(env.packages), "pip": list(env.pip)})


def plan_for(name: str, task_dir: Path, env: EnvironmentSpec, file: Path | None = None) -> ImagePlan:
    """The build plan of ``env`` declared by the task in ``task_dir`` (``name``: what lists it); an
    image that extends another is :func:`extension_plan`'s."""
    if env.extends is not None:
        raise ValueError(f"{name}: an environment that extends the task's image is planned over that image's plan")
    if env.dockerfile is not None:
        return _from_dockerfile(name, task_dir, env)
    return _from_steps(name, task_dir, env, file or task_dir / "task.yaml")
