"""A `FROM` picks the Debian release whose packaged runtime is the image's: `python:3.13-slim`
on bookworm gave Python 3.11, `golang:1.24` gave Go 1.19 and `rust:1.85` Rust 1.63, so a real
task's build or tests failed on the language version, not on the agent. And `base:
debian:trixie` built bookworm's packages under trixie's name: the host's (bookworm) sources were
given to mmdebstrap as they were."""

from __future__ import annotations

import asyncio
import subprocess
import zipfile
from pathlib import Path

import pytest

from assay.environments.build import build
from assay.environments.debian import sources_for
from assay.environments.plan import plan_for
from assay.environments.releases import choose, tag_version
from assay.environments.runtime import root_of
from assay.environments.store import ImageInfo, ImageStore
from assay.sandbox.base import SandboxSpec
from assay.sandbox.bwrap.backend import BwrapBackend
from assay.spec.budget import NetworkProfile
from assay.spec.environment import EnvironmentSpec

DOCKER = EnvironmentSpec(dockerfile="Dockerfile")


def _plan(tmp_path: Path, text: str, env: EnvironmentSpec = DOCKER):  # noqa: ANN202
    (tmp_path / "Dockerfile").write_text(text)
    return plan_for("t", tmp_path, env)


def _as_agent(info: ImageInfo, store: ImageStore, ws: Path, script: str) -> tuple[int | None, str]:
    """``script`` run in an agent's sandbox over the built image (unprivileged, no network)."""
    async def go() -> tuple[int | None, str]:
        sb = await BwrapBackend().create(SandboxSpec(workspace=ws, network=NetworkProfile.none,
                                                     image=root_of(info, store), label="agent"))
        try:
            r = await sb.exec(["/bin/sh", "-c", script], timeout_s=120)
            return r.exit_code, r.stdout.decode() + r.stderr.decode()
        finally:
            await sb.destroy()
    return asyncio.run(go())


@pytest.mark.parametrize(("image", "release", "says"), [
    ("python:3.11-slim", "bookworm", "Debian bookworm's Python is 3.11, as the image's"),
    ("python:3.13-slim", "trixie", "Debian trixie's Python is 3.13, as the image's"),
    ("python:3.12-slim", "trixie", "Debian trixie's Python is 3.13; the image's is 3.12"),
    ("python:3.13-slim-bookworm", "trixie", "bookworm's is 3.11"),
    ("ghcr.io/laude-institute/t-bench/python-3-13:20250620", "trixie", "as the image's"),
    ("golang:1.19-bookworm", "bookworm", "Debian bookworm's Go is 1.19, as the image's"),
    ("golang:1.24-bookworm", "trixie", "Debian trixie's Go is 1.24, as the image's"),
    ("golang:1.27-bookworm", "trixie", "older than the image's 1.27"),
    ("rust:1.85-slim", "trixie", "Debian trixie's Rust is 1.85, as the image's"),
    ("node:18", "bookworm", "Debian bookworm's Node.js is 18, as the image's"),
    ("node:20-slim@sha256:" + "0" * 64, "trixie", "Debian trixie's Node.js is 20, as the image's"),
    ("node:22", "trixie", "older than the image's 22"),
    ("eclipse-temurin:21-jdk", "trixie", "Java is 21"),
    ("python:slim", "trixie", "the image names no version"),
])
def test_a_runtime_image_gets_the_release_of_its_version(tmp_path: Path, image: str, release: str, says: str) -> None:
    plan = _plan(tmp_path, f"FROM {image}\nRUN true\n")
    assert plan.base.release == release, plan.deviations
    assert f"FROM {image} mapped to debian:{release}" in plan.deviations[0], plan.deviations
    assert says in plan.deviations[0], plan.deviations


@pytest.mark.parametrize(("image", "release"), [
    ("debian:trixie", "trixie"), ("debian:trixie-slim", "trixie"), ("debian:13-slim", "trixie"),
    ("debian:bookworm-slim", "bookworm"), ("debian:12", "bookworm"),
])
def test_a_debian_from_is_built_on_its_own_release_exactly(tmp_path: Path, image: str, release: str) -> None:
    plan = _plan(tmp_path, f"FROM {image}\nRUN true\n")
    assert plan.base.release == release and plan.deviations == (), plan.deviations


def test_an_image_of_another_system_maps_to_the_declared_base(tmp_path: Path) -> None:
    plan = _plan(tmp_path, "FROM ubuntu:24.04\nRUN true\n", EnvironmentSpec(dockerfile="Dockerfile",
                                                                            base="debian:trixie"))
    assert plan.base.release == "trixie"
    assert "FROM ubuntu:24.04 mapped to debian:trixie (that image cannot be fetched here)" in plan.deviations


def test_the_stages_an_image_needs_share_one_release(tmp_path: Path) -> None:
    """`FROM rust:1.85-bookworm AS build` then `FROM debian:bookworm-slim` with its binary: a builder
    on trixie and a final image on bookworm would hand over a binary linked to a newer C library
    than the final image has, so every stage the image needs is built on the newest of theirs."""
    plan = _plan(tmp_path, "FROM rust:1.85-bookworm AS build\nRUN true\nFROM debian:bookworm AS unused\n"
                           "FROM debian:bookworm-slim\nCOPY --from=build /etc/hostname /h\n")
    assert plan.base.release == "trixie"
    stage = next(o.stage for o in plan.ops if o.stage is not None)
    assert stage.base.release == "trixie"
    assert any("FROM debian:bookworm-slim built on debian:trixie" in d for d in plan.deviations), plan.deviations
    alone = _plan(tmp_path, "FROM rust:1.85-bookworm AS unused\nRUN true\nFROM debian:bookworm-slim\nRUN true\n")
    assert alone.base.release == "bookworm" and alone.deviations == ()  # a stage it does not need moves nothing


def test_versions_read_from_tags_and_names() -> None:
    assert tag_version("python:3.13-slim-bookworm", "Python") == (3, 13)
    assert tag_version("ghcr.io/x/t-bench/python-3-13:20250620", "Python") == (3, 13)
    assert tag_version("node:20", "Node.js") == (20,)
    assert tag_version("python:latest", "Python") is None
    assert tag_version("python", "Python") is None
    assert choose("golang:1.99", "Go", "bookworm").release == "trixie"


def test_sources_name_the_release_asked_for() -> None:
    deb822 = ("Types: deb\nURIs: http://deb.example/debian\nSuites: bookworm bookworm-updates\nComponents: main\n\n"
              "Types: deb\nURIs: http://deb.example/debian-security\nSuites: bookworm-security\nComponents: main\n")
    out = sources_for(deb822, "trixie")
    assert "Suites: trixie trixie-updates\n" in out and "Suites: trixie-security\n" in out
    assert "http://deb.example/debian\n" in out
    one_line = "deb http://deb.example/debian bookworm main\ndeb [arch=amd64] http://x/bookworm-mirror bookworm-updates main\n"
    assert sources_for(one_line, "trixie") == ("deb http://deb.example/debian trixie main\n"
                                                "deb [arch=amd64] http://x/bookworm-mirror trixie-updates main\n")
    assert sources_for(deb822, "bookworm") == deb822
    with pytest.raises(ValueError, match="name no Debian release"):
        sources_for("Types: deb\nURIs: http://x/ubuntu\nSuites: noble\nComponents: main\n", "trixie")


def test_a_trixie_base_is_trixie(image_store: ImageStore, tmp_path: Path) -> None:
    """Built for real: the base's own os-release and Python are trixie's."""
    plan = plan_for("trixie", tmp_path, EnvironmentSpec(base="debian:trixie"), tmp_path / "task.yaml")
    info = build(image_store, plan)
    root = image_store.rootfs(info.digest)
    fields = dict(line.split("=", 1) for line in (root / "etc/os-release").read_text().splitlines() if "=" in line)
    assert fields["VERSION_CODENAME"] == "trixie", fields
    suites = (root / "etc/apt/sources.list.d/debian.sources").read_text()
    assert "bookworm" not in suites and "trixie" in suites, suites
    python = subprocess.run(["chroot", str(root), "/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"],
                            capture_output=True, text=True, timeout=60)
    assert python.stdout.strip() == "(3, 13)", python


GO_BUILDER = """\
FROM golang:1.24-bookworm AS builder
WORKDIR /src
COPY go.mod main.go ./
RUN go build -o /out/hello . && /out/hello > /out/said
FROM debian:bookworm-slim
COPY --from=builder /out/hello /usr/local/bin/hello
COPY --from=builder /out/said /said
"""
GO_MAIN = 'package main\n\nimport "fmt"\n\nfunc main() {\n\tfor i := range 3 {\n\t\tfmt.Print(i)\n\t}\n\tfmt.Println()\n}\n'


def test_a_go_124_builder_builds_and_its_binary_runs_in_the_final_stage(image_store: ImageStore,
                                                                        tmp_path: Path) -> None:
    """A real multi-stage Go build in the shape of a fetched Terminal-Bench 2.1 task: `range 3`
    over an int is Go 1.22's; Debian bookworm's Go 1.19 refused it, so the image did not build.
    The builder and the final stage are both trixie, so the binary runs where it is copied."""
    (tmp_path / "go.mod").write_text("module hello\n\ngo 1.24\n")
    (tmp_path / "main.go").write_text(GO_MAIN)
    plan = _plan(tmp_path, GO_BUILDER)
    assert plan.base.release == "trixie", plan.deviations
    info = build(image_store, plan)
    try:
        root = image_store.rootfs(info.digest)
        assert (root / "said").read_text() == "012\n"
        ran = subprocess.run(["chroot", str(root), "/usr/local/bin/hello"], capture_output=True, text=True, timeout=60)
        assert ran.stdout == "012\n", ran
    finally:
        image_store.remove(info.digest)


def test_pip_in_a_python_image_installs_for_the_agent(image_store: ImageStore, tmp_path: Path) -> None:
    """Python's own images carry no EXTERNALLY-MANAGED marker, so `pip install` works there; mapped
    to Debian's python3 it stopped with "externally-managed-environment". The agent (unprivileged
    here) now installs a wheel into its user site, as pip does for a user who cannot write the
    system's. Python's images also carry Python.h (official Terminal-Bench 2.0
    feal-differential-cryptanalysis's tests build a C module against it: "Python.h: No such file or
    directory" before 2026-12-06), so the image gets Debian's python3-dev."""
    plan = _plan(tmp_path, "FROM python:3.13-slim\nRUN true\n")
    assert any("EXTERNALLY-MANAGED" in d for d in plan.deviations), plan.deviations
    info = build(image_store, plan)
    ws = tmp_path / "ws"
    ws.mkdir()
    wheel = _wheel(ws, "hello", "0.1", "X = 42\n")
    script = (f"cd / && python3 -m pip install --no-index -q /workspace/{wheel} 2>&1; python3 -c 'import hello; "
              "import os, sysconfig; print(os.path.isfile(os.path.join(sysconfig.get_path(\"include\"), \"Python.h\")), "
              "hello.X)'")
    try:
        code, out = _as_agent(info, image_store, ws, script)
        assert code == 0 and out.strip().endswith("True 42"), out
        assert "externally-managed" not in out, out
    finally:
        image_store.remove(info.digest)


def _wheel(folder: Path, name: str, version: str, module: str) -> str:
    """A pure-Python wheel of ``name`` ``version`` holding ``module``, written as pip writes one."""
    wheel = f"{name}-{version}-py3-none-any.whl"
    info = f"{name}-{version}.dist-info"
    files = {f"{name}/__init__.py": module,
             f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    with zipfile.ZipFile(folder / wheel, "w") as z:
        for n, text in files.items():
            z.writestr(n, text)
        z.writestr(f"{info}/RECORD", "".join(f"{n},,\n" for n in files) + f"{info}/RECORD,,\n")
    return wheel


def test_a_package_the_base_added_is_replaced_by_pip_as_in_pythons_image(image_store: ImageStore,
                                                                          tmp_path: Path) -> None:
    """A fetched Terminal-Bench 2.1 task's `RUN python -m pip install pytest==8.4.1` failed to build:
    the base carries Debian's pytest for the verifier, and pip cannot uninstall a Debian package
    ("uninstall-no-record-file"). Python's image has no pytest, and its pip replaces what pip
    installed. The base's Python packages now say which files are theirs (a RECORD from dpkg's
    list), so pip replaces them: here Debian's pluggy (a pytest dependency) by a wheel, offline."""
    wheel = _wheel(tmp_path, "pluggy", "99.0", "VERSION = 99\n")
    plan = _plan(tmp_path, f"FROM python:3.13-slim\nCOPY {wheel} /tmp/\n"
                           f"RUN python -m pip install --no-index /tmp/{wheel} && rm /tmp/{wheel}\n"
                           "RUN python -c 'import pluggy; print(pluggy.VERSION)' > /pluggy-version\n")
    info = build(image_store, plan)
    try:
        root = image_store.rootfs(info.digest)
        assert (root / "pluggy-version").read_text() == "99\n"
        assert not list((root / "usr/lib/python3/dist-packages").glob("pluggy*"))  # Debian's, removed by pip
    finally:
        image_store.remove(info.digest)


GO_COPIED = """\
FROM golang:1.24-bookworm AS builder
RUN go version
FROM python:3.13-slim-bookworm
COPY --from=builder /usr/local/go /usr/local/go
ENV PATH="/usr/local/go/bin:${PATH}"
WORKDIR /app
COPY go.mod main.go ./
RUN go build -o /app/hello . && /app/hello > /app/said
"""


def test_go_copied_from_a_builder_is_whole_in_the_final_stage(image_store: ImageStore, tmp_path: Path) -> None:
    """A fetched Terminal-Bench 2.1 task (loki-logql-label-filter-stage-pipeline) copies Go from its
    builder (`COPY --from=builder /usr/local/go /usr/local/go`) and builds at test time. Debian's Go
    tree links its sources to /usr/share/go-1.24, so the copy held dangling links and `go build`
    said "package fmt is not in std". Go's image has a whole tree at /usr/local/go; so does the
    mapped builder now."""
    (tmp_path / "go.mod").write_text("module hello\n\ngo 1.24\n")
    (tmp_path / "main.go").write_text(GO_MAIN)
    info = build(image_store, _plan(tmp_path, GO_COPIED))
    try:
        assert (image_store.rootfs(info.digest) / "app/said").read_text() == "012\n"
    finally:
        image_store.remove(info.digest)


RUST_TOOL = """\
FROM rust:1.85-slim
COPY tool /src/tool
RUN cargo install --offline --path /src/tool
"""


def test_a_rust_image_keeps_cargos_home_on_the_path(image_store: ImageStore, tmp_path: Path) -> None:
    """Rust's image sets CARGO_HOME=/usr/local/cargo with its bin on the PATH, so a Dockerfile's
    `cargo install` puts the tool where every user finds it. Mapped to Debian's cargo without it,
    the tool went to /root/.cargo/bin: off the PATH, and unreadable to the unprivileged agent."""
    (tmp_path / "tool" / "src").mkdir(parents=True)
    (tmp_path / "tool" / "Cargo.toml").write_text('[package]\nname = "tool"\nversion = "0.1.0"\nedition = "2021"\n')
    (tmp_path / "tool" / "src" / "main.rs").write_text('fn main() { println!("tool ran"); }\n')
    plan = _plan(tmp_path, RUST_TOOL)
    assert dict(plan.env).get("CARGO_HOME") == "/usr/local/cargo", plan.env
    info = build(image_store, plan)
    ws = tmp_path / "ws"
    ws.mkdir()
    try:
        code, out = _as_agent(info, image_store, ws, "tool && cargo --version")
        assert code == 0 and out.startswith("tool ran\ncargo 1.85"), out
    finally:
        image_store.remove(info.digest)


def test_a_package_the_newer_release_dropped_is_installed_as_its_successor(tmp_path: Path) -> None:
    """Two official Terminal-Bench 2.0 images (build-cython-ext, video-processing) are
    `python:3.13-slim-bookworm` and `apt-get install libgl1-mesa-glx`, a transitional package of
    bookworm. For Python 3.13 they are built on trixie, which dropped it: "Package
    'libgl1-mesa-glx' has no installation candidate", the image did not build. It is installed
    as what it stood for (libgl1 libglx-mesa0), said; an image left on its own release is untouched."""
    run = ("RUN apt-get update && apt-get install -y git build-essential libgl1-mesa-glx && rm -rf /var/lib/apt/lists/*\n"
           'RUN ["apt-get", "install", "-y", "libegl1-mesa"]\n')
    plan = _plan(tmp_path, "FROM python:3.13-slim-bookworm\n" + run)
    assert plan.base.release == "trixie"
    commands = [" ".join(o.argv) for o in plan.ops if o.kind == "run"]
    assert any("install -y git build-essential libgl1 libglx-mesa0 && rm" in c for c in commands), commands
    assert any(c == "apt-get install -y libegl1" for c in commands), commands
    assert not any("-mesa-glx" in c or "libegl1-mesa" in c for c in commands), commands
    said = [d for d in plan.deviations if "transitional" in d]
    assert len(said) == 2 and "libgl1-mesa-glx installed as libgl1 libglx-mesa0" in said[0], plan.deviations
    kept = _plan(tmp_path, "FROM python:3.11-slim-bookworm\n" + run)
    assert kept.base.release == "bookworm"
    assert any("libgl1-mesa-glx" in " ".join(o.argv) for o in kept.ops), kept.ops
    assert not [d for d in kept.deviations if "transitional" in d]
