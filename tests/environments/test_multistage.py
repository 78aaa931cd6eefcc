"""Multi-stage Dockerfiles: a builder stage, then the final image copying what it built
(``COPY --from=builder``). 8 of 51 real task Dockerfiles fetched on 2026-12-06 (Harbor and
Terminal-Bench 2.1 collections: Go, Rust, Java and Node builders) are written this way, and every
one was refused ("a second FROM is not honoured").

Each stage the final one needs is built as an image of its own (cached in the store like any);
``COPY --from=STAGE`` copies from that image's root, resolved inside it: a link in a stage
(``/out/x -> /etc/shadow``) names the stage's own file, never the host's. Stages the final image
does not need are not built, and do not enter its digest."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from assay.environments.build import BuildFailed, build
from assay.environments.plan import plan_for
from assay.environments.store import ImageStore
from assay.spec.environment import EnvironmentSpec
from assay.spec.environment_dockerfile import DockerfileError, parse
from tests.environments.conftest import shared_env

DF = Path("Dockerfile")

TWO_STAGES = """\
ARG GO=1.22
FROM golang:${GO}-bookworm AS builder
WORKDIR /src
RUN echo built > artifact
FROM debian:bookworm
WORKDIR /app
COPY --from=builder /src/artifact ./bin/
RUN true
"""


def test_the_final_stage_is_the_image_and_copies_name_their_stage() -> None:
    df = parse(DF, TWO_STAGES)
    assert df.from_image == "debian:bookworm" and df.from_line == 5
    [builder] = df.stages
    assert builder.name == "builder" and builder.from_image == "golang:1.22-bookworm"
    assert [s.kind for s in builder.steps] == ["workdir", "run"]
    copy = [s for s in df.steps if s.kind == "copy"][0]
    assert copy.from_stage == 0 and copy.sources == ("/src/artifact",) and copy.dest == "/app/./bin/"
    assert all(s.from_stage is None for s in df.steps if s.kind == "copy" and s is not copy)


def test_stages_are_named_by_name_or_index_and_can_build_on_each_other() -> None:
    df = parse(DF, "FROM debian:bookworm AS base\nENV A=1\nWORKDIR /w\nFROM base AS more\nRUN echo $A\n"
                   "FROM debian:bookworm\nCOPY --from=1 /w/x /x\nCOPY --from=base /w/y /y\n")
    assert [s.name for s in df.stages] == ["base", "more"]
    assert df.stages[1].from_stage == 0
    assert [s.from_stage for s in df.steps if s.kind == "copy"] == [1, 0]


@pytest.mark.parametrize(("text", "line", "words"), [
    ("FROM debian:bookworm AS a\nFROM debian:bookworm\nCOPY --from=b /x /x\n", 3, "--from=b"),
    ("FROM debian:bookworm AS a\nFROM debian:bookworm\nCOPY --from=2 /x /x\n", 3, "--from=2"),
    # str.isdigit holds for both; int refuses a superscript two and reads an Arabic-Indic zero as 0:
    # neither is an index (BuildKit reads ASCII digits only), each a name no stage has
    ("FROM debian:bookworm AS a\nFROM debian:bookworm\nCOPY --from=\u00b2 /x /x\n", 3, "names no earlier stage"),
    ("FROM debian:bookworm AS a\nFROM debian:bookworm\nCOPY --from=\u0660 /x /x\n", 3, "names no earlier stage"),
    ("FROM debian:bookworm AS a\nFROM debian:bookworm\nCOPY --from=nginx:1.27 /etc/nginx /etc/nginx\n", 3,
     "another image"),
    ("FROM debian:bookworm AS a\nFROM debian:bookworm\nCOPY --from=a /../../etc/passwd /x\n", 3, ".."),
    ("FROM debian:bookworm AS a\nFROM debian:bookworm AS a\n", 2, "named twice"),
    ("FROM debian:bookworm AS a\nRUN true\nFROM debian:bookworm\nCOPY --from=a\n", 4, "source and a destination"),
])
def test_what_a_stage_cannot_name_is_refused_with_its_line(text: str, line: int, words: str) -> None:
    with pytest.raises(DockerfileError) as e:
        parse(DF, text)
    assert e.value.line == line and words in str(e.value), str(e.value)


def _plan(tmp_path: Path, text: str):  # noqa: ANN202
    (tmp_path / "Dockerfile").write_text(text)
    plan = plan_for("ms", tmp_path, EnvironmentSpec(dockerfile="Dockerfile"))
    base = plan_for("s", tmp_path, shared_env()).base  # the shared base, for every stage
    return _with_base(plan, base)


def _with_base(plan, base):  # noqa: ANN001, ANN202
    ops = tuple(dataclasses.replace(o, stage=_with_base(o.stage, base)) if o.stage is not None else o for o in plan.ops)
    return dataclasses.replace(plan, base=base, ops=ops)


def test_an_unused_stage_is_not_in_the_digest_and_a_used_one_is(tmp_path: Path) -> None:
    def digest(builder_line: str, unused_line: str) -> str:
        return _plan(tmp_path, f"FROM debian:bookworm AS builder\nRUN {builder_line}\n"
                               f"FROM debian:bookworm AS unused\nRUN {unused_line}\n"
                               "FROM debian:bookworm\nCOPY --from=builder /etc/hostname /h\n").digest

    a = digest("echo 1 > /x", "echo u1")
    assert digest("echo 1 > /x", "echo u2") == a
    assert digest("echo 2 > /x", "echo u1") != a
    plan = _plan(tmp_path, "FROM golang:1.22-bookworm AS builder\nRUN true\nFROM debian:bookworm\n"
                           "COPY --from=builder /etc/hostname /h\n")
    assert any("golang" in d for d in plan.deviations)  # how the builder's FROM was read is said too


def test_a_real_multi_stage_build(image_store: ImageStore, tmp_path: Path) -> None:
    host_secret = tmp_path / "host-secret.txt"
    host_secret.write_text("the host's own file\n")
    plan = _plan(tmp_path, f"""\
FROM debian:bookworm AS builder
RUN mkdir -p /out/sub && echo built > /out/artifact && echo deep > /out/sub/f \\
    && echo stage-only > /stage-only && ln -s /etc/os-release /out/os-link && ln -s {host_secret} /out/host-link
FROM debian:bookworm
WORKDIR /app
COPY --from=builder /out/artifact ./artifact
COPY --from=builder /out /app/all/
COPY --from=builder /out/os-link /app/os-release
""")
    info = build(image_store, plan)
    try:
        root = image_store.rootfs(info.digest)
        assert (root / "app/artifact").read_text() == "built\n"
        assert (root / "app/all/sub/f").read_text() == "deep\n" and (root / "app/all/artifact").is_file()
        assert os.readlink(root / "app/all/host-link") == str(host_secret)  # copied as a link, never followed
        assert not (root / "stage-only").exists()  # only what is copied leaves the stage
        # a link given as the source is resolved inside the stage: the stage's os-release
        assert (root / "app/os-release").read_text() == (root / "etc/os-release").read_text()
        assert not (root / "app/os-release").is_symlink()
    finally:
        image_store.remove(info.digest)


def test_a_stage_link_to_a_host_path_copies_nothing_of_the_host(image_store: ImageStore, tmp_path: Path) -> None:
    """Attack: a third-party task's builder stage plants `/out/s -> /HOST/PATH`; the final stage
    copies `/out/s`. Read on the host, that would put the host's file into the image. Resolved in
    the stage, the path does not exist there: the build fails naming the line."""
    host_secret = tmp_path / "host-secret.txt"
    host_secret.write_text("the host's own file\n")
    plan = _plan(tmp_path, f"FROM debian:bookworm AS builder\nRUN mkdir /out && ln -s {host_secret} /out/s\n"
                           "FROM debian:bookworm\nCOPY --from=builder /out/s /stolen\n")
    with pytest.raises(BuildFailed) as e:
        build(image_store, plan)
    assert e.value.where == "line 4" and "/out/s" in e.value.message
    assert image_store.get(plan.digest) is None


def test_a_go_image_keeps_gos_official_layout(tmp_path: Path) -> None:
    """Go's official image keeps Go at `/usr/local/go` and `GOPATH=/go`, and multi-stage
    Dockerfiles copy exactly those (`COPY --from=builder /usr/local/go /usr/local/go`, and the
    modules a builder downloaded, `/go/pkg/mod`). A `FROM golang:*` mapped to Debian's Go gets the
    same paths (a link to Debian's Go, `GOPATH=/go`, the same `PATH`), said with the mapping."""
    (tmp_path / "Dockerfile").write_text("FROM golang:1.22-bookworm\nRUN go version\n")
    plan = plan_for("go", tmp_path, EnvironmentSpec(dockerfile="Dockerfile"))
    layout = [o for o in plan.ops if o.kind == "run" and "/usr/local/go" in " ".join(o.argv)]
    assert layout and plan.ops.index(layout[0]) < [o.kind for o in plan.ops].index("run", 2)
    env = dict(plan.env)
    assert env["GOPATH"] == "/go" and env["PATH"].startswith("/go/bin:/usr/local/go/bin:")
    assert any("/usr/local/go" in d for d in plan.deviations)
    (tmp_path / "Dockerfile").write_text("FROM debian:bookworm\nRUN true\n")
    assert "GOPATH" not in dict(plan_for("d", tmp_path, EnvironmentSpec(dockerfile="Dockerfile")).env)
