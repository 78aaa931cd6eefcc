"""A Dockerfile read as a Dockerfile: what is honoured, and every line that is not refused
when the task loads with its file and line."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from assay.errors import SpecError
from assay.spec.environment import EnvironmentSpec
from assay.spec.environment_dockerfile import DockerfileError, parse
from assay.spec.load import load_suite

DF = Path("Dockerfile")


def test_forms_are_read() -> None:
    text = """# syntax comment
ARG V=1.2
FROM python:3.11-slim AS build
ENV A=1 B="two words"
ENV OLD form value
WORKDIR /app
WORKDIR sub
RUN apt-get update && \\
    # a comment inside a continuation
    apt-get install -y jq
RUN ["echo", "exec form"]
COPY a.txt b/ ./
RUN <<EOF
echo "$V"
set -e
EOF
USER nobody
"""
    df = parse(DF, text)
    assert df.from_image == "python:3.11-slim" and df.from_line == 3
    kinds = [(s.kind, s.line) for s in df.steps]
    assert kinds == [("env", 4), ("env", 5), ("workdir", 6), ("workdir", 7), ("run", 8), ("run", 11),
                     ("copy", 12), ("run", 13), ("user", 17)]
    env = dict(df.steps[0].env) | dict(df.steps[1].env)
    assert env == {"A": "1", "B": "two words", "OLD": "form value"}
    assert df.steps[3].dest == "/app/sub"
    assert df.steps[4].argv == ("/bin/sh", "-c", "apt-get update &&  apt-get install -y jq")
    assert df.steps[5].argv == ("echo", "exec form")
    assert df.steps[6].sources == ("a.txt", "b/") and df.steps[6].dest == "/app/sub/./"
    assert df.steps[7].argv[2] == 'echo "$V"\nset -e\n' and ("V", "1.2") in df.steps[7].env
    assert df.steps[8].dest == "nobody"


def test_heredocs_inside_a_run_command_are_its_script_as_buildkit_reads_them() -> None:
    """The shape 6 of TermiGen's 3,566 Harbor tasks use (``RUN cat > FILE << 'EOF'``, the body on
    the lines after): the body is the command's, never read as instructions."""
    text = (
        "FROM debian:bookworm\n"
        "RUN cat > /app/check.py << 'EOF'\n"
        "#!/usr/bin/env python3\n"
        "import sys\n"
        "print(\"$HOME stays literal\")\n"
        "EOF\n"
        "\n"
        "RUN cat > /app/a.h <<-EOF && cat > /app/b.txt <<B\n"
        "\t#define A \"$V\"\n"
        "\tEOF\n"
        "second\n"
        "B\n"
        "RUN echo \"$((1<<2))\" && cat <<<word\n"
        "RUN [ ! -e /usr/bin/python ] && ln -s /usr/bin/python3 /usr/bin/python\n"
    )
    df = parse(DF, text)
    assert [(s.kind, s.line) for s in df.steps] == [("run", 2), ("run", 8), ("run", 13), ("run", 14)]
    assert df.steps[0].argv == ("/bin/sh", "-c", "cat > /app/check.py << 'EOF'\n#!/usr/bin/env python3\nimport sys\n"
                                "print(\"$HOME stays literal\")\nEOF")
    assert df.steps[1].argv[2] == "cat > /app/a.h <<-EOF && cat > /app/b.txt <<B\n#define A \"$V\"\nEOF\nsecond\nB"
    assert df.steps[2].argv == ("/bin/sh", "-c", 'echo "$((1<<2))" && cat <<<word')  # no heredoc there
    # not JSON: Docker reads a line starting with [ as the shell form (one TermiGen task does)
    assert df.steps[3].argv == ("/bin/sh", "-c", "[ ! -e /usr/bin/python ] && ln -s /usr/bin/python3 /usr/bin/python")


def test_heredoc_scripts_run_as_a_shell_runs_them(tmp_path: Path) -> None:
    """What the builder hands to /bin/sh does what Docker's would: quoted bodies stay literal,
    unquoted ones expand, ``<<-`` drops tabs, a whole-command body with a #! line runs by it."""
    import subprocess
    import sys

    text = (
        "FROM debian:bookworm\n"
        f"RUN cat > {tmp_path}/q.txt << 'EOF'\n"
        "$HOME literal\n"
        "EOF\n"
        f"RUN cat > {tmp_path}/u.txt <<-EOF && echo done > {tmp_path}/d.txt\n"
        "\t$V expanded\n"
        "\tEOF\n"
        "RUN <<EOF\n"
        f"#!{sys.executable}\n"
        f"open('{tmp_path}/py.txt', 'w').write('by python')\n"
        "EOF\n"
    )
    for step in parse(DF, text).steps:
        subprocess.run(step.argv, check=True, env={"V": "v1", "PATH": "/usr/bin:/bin"}, timeout=60)
    assert (tmp_path / "q.txt").read_text() == "$HOME literal\n"
    assert (tmp_path / "u.txt").read_text() == "v1 expanded\n" and (tmp_path / "d.txt").read_text() == "done\n"
    assert (tmp_path / "py.txt").read_text() == "by python"


@pytest.mark.parametrize(("text", "line", "words"), [
    ("FROM debian:bookworm\nRUN true\nENTRYPOINT [\"/start.sh\"]\n", 3, "ENTRYPOINT"),
    ("FROM debian:bookworm\n\nSHELL [\"/bin/bash\", \"-c\"]\n", 3, "SHELL"),
    ("FROM debian:bookworm\nVOLUME /data\n", 2, "VOLUME"),
    ("FROM debian:bookworm\nONBUILD RUN true\n", 2, "ONBUILD"),
    ("FROM debian:bookworm\nFROBNICATE x\n", 2, "FROBNICATE"),
    ("FROM debian:bookworm\nCOPY --from=build /x /y\n", 2, "--from"),
    ("FROM debian:bookworm\nADD https://example.org/x.tgz /x\n", 2, "URL"),
    ("FROM a AS one\nRUN true\nFROM b AS one\n", 3, "named twice"),  # stages: test_multistage
    ("RUN true\nFROM debian:bookworm\n", 1, "before FROM"),
    ("FROM debian:bookworm\nRUN <<EOF\necho never closed\n", 2, "never closed"),
    ("FROM debian:bookworm\nCOPY ../outside /x\n", 2, "leaves the build context"),
    ("FROM debian:bookworm\nRUN --mount=type=secret,id=x true\n", 2, "type=secret"),  # cache mounts: test_run_flags
    ("FROM debian:bookworm\nENTRYPOINT [\"/start.sh\"]\n", 2, "ENTRYPOINT"),
    ("# nothing\n", 1, "no FROM"),
])
def test_lines_assay_cannot_honour_are_refused_with_their_line(text: str, line: int, words: str) -> None:
    with pytest.raises(DockerfileError) as e:
        parse(DF, text)
    assert e.value.line == line and words in str(e.value), str(e.value)


def _suite(tmp_path: Path, dockerfile: str, files: dict[str, str] | None = None) -> Path:
    (tmp_path / "suite.yaml").write_text("name: s\nversion: '1'\ncategories: [{id: c}]\n")
    t = tmp_path / "tasks" / "t"
    (t / "env").mkdir(parents=True)
    (t / "task.yaml").write_text("category: c\nenvironment: {dockerfile: env/Dockerfile, context: env}\n"
                                 "predicates: [{id: p, kind: file_exists, path: x}]\n")
    (t / "prompt.md").write_text("do it\n")
    (t / "env" / "Dockerfile").write_text(dockerfile)
    for name, text in (files or {}).items():
        (t / "env" / name).write_text(text)
    return tmp_path


def test_the_task_is_refused_when_it_loads_naming_file_and_line(tmp_path: Path) -> None:
    root = _suite(tmp_path, "FROM ubuntu:22.04\nRUN apt-get update\nENTRYPOINT [\"/start.sh\"]\n")
    with pytest.raises(SpecError) as e:
        load_suite(root)
    [p] = e.value.problems
    assert p.file.endswith("tasks/t/env/Dockerfile") and p.field == "line 3" and "ENTRYPOINT" in p.message


def test_what_the_image_would_run_or_label_is_not_applied_and_said(tmp_path: Path) -> None:
    """`CMD ["bash"]`, `EXPOSE`, `LABEL`, `HEALTHCHECK`, `STOPSIGNAL`, `MAINTAINER`: Harbor and
    Terminal-Bench start every task container with their own command, so none of these shapes
    what an agent or a verifier finds. Real tasks carry them (two of five fetched Harbor tasks
    ended on `CMD ["bash"]`); they load, build the same steps, and each is named with its line."""
    from assay.environments.plan import plan_for

    body = "FROM python:3.12-slim\nLABEL a=b\nWORKDIR /app\nCOPY here.txt /app/\nRUN echo ok > /opt/ok\n"
    tail = ("EXPOSE 8080/tcp\nHEALTHCHECK --interval=5s CMD curl -f http://localhost:8080/ || exit 1\n"
            "STOPSIGNAL SIGTERM\nMAINTAINER someone\nCMD [\"bash\"]\n")
    plain, extra = tmp_path / "plain", tmp_path / "extra"
    for d, text in ((plain, body), (extra, body + tail)):
        d.mkdir()
        (d / "Dockerfile").write_text(text)
        (d / "here.txt").write_text("x")
    a = plan_for("plain", plain, EnvironmentSpec(dockerfile="Dockerfile"))
    b = plan_for("extra", extra, EnvironmentSpec(dockerfile="Dockerfile"))
    assert a.digest == b.digest  # the same image: nothing of these lines is built
    said = [d for d in b.deviations if d not in a.deviations]
    assert any(d.startswith("Dockerfile:2: LABEL ") for d in a.deviations)
    assert [d.split(" ", 2)[:2] for d in said] == [["Dockerfile:6:", "EXPOSE"],
                                                  ["Dockerfile:7:", "HEALTHCHECK"], ["Dockerfile:8:", "STOPSIGNAL"],
                                                  ["Dockerfile:9:", "MAINTAINER"], ["Dockerfile:10:", "CMD"]], said
    assert "not run" in said[-1] and all(d in b.deviations for d in a.deviations)
    (tmp_path / "s").mkdir()
    assert load_suite(_suite(tmp_path / "s", body + tail, {"here.txt": "x"})).tasks[0].spec.environment is not None


def test_an_entrypoint_that_clears_the_base_images_is_not_applied_and_said() -> None:
    """`ENTRYPOINT []` clears what the base image would run around the command; assay runs no
    entrypoint at all, so the line changes nothing here (a fetched Terminal-Bench 2.1 task's
    Dockerfile is `FROM golang:...` and `ENTRYPOINT []`). Any other ENTRYPOINT stays refused."""
    df = parse(DF, "FROM golang:1.22-bookworm\nENTRYPOINT []\nRUN true\nENTRYPOINT [\"\"]\n")
    assert [s.kind for s in df.steps] == ["run"]
    assert [n.split(" ", 2)[:2] for n in df.not_applied] == [["Dockerfile:2:", "ENTRYPOINT"],
                                                             ["Dockerfile:4:", "ENTRYPOINT"]]
    assert "assay runs none" in df.not_applied[0]


def test_a_copy_source_that_is_missing_is_refused(tmp_path: Path) -> None:
    root = _suite(tmp_path, "FROM debian:bookworm\nCOPY here.txt /opt/\nCOPY gone.txt /opt/\n", {"here.txt": "x"})
    with pytest.raises(SpecError) as e:
        load_suite(root)
    [p] = e.value.problems
    assert p.field == "line 3" and "gone.txt" in p.message


def test_a_good_dockerfile_loads(tmp_path: Path) -> None:
    root = _suite(tmp_path, "FROM debian:bookworm\nCOPY here.txt /opt/\n", {"here.txt": "x"})
    assert load_suite(root).tasks[0].spec.environment is not None


def test_environment_forms_are_exclusive_and_bases_are_debian() -> None:
    with pytest.raises(ValidationError, match="either a Dockerfile"):
        EnvironmentSpec(dockerfile="Dockerfile", packages=["jq"])
    with pytest.raises(ValidationError, match="needs `base:`"):
        EnvironmentSpec()
    with pytest.raises(ValidationError, match="not a Debian release"):
        EnvironmentSpec(base="ubuntu:22.04")
    with pytest.raises(ValidationError, match="not a Debian package name"):
        EnvironmentSpec(base="debian:bookworm", packages=["jq; rm -rf /"])


def test_the_suite_default_applies_where_a_task_declares_none(tmp_path: Path) -> None:
    (tmp_path / "suite.yaml").write_text("name: s\nversion: '1'\ncategories: [{id: c}]\n"
                                         "default_environment: {base: 'debian:bookworm', packages: [jq]}\n")
    for name, own in (("plain", ""), ("own", "environment: {base: 'debian:bookworm', packages: [gawk]}\n")):
        t = tmp_path / "tasks" / name
        t.mkdir(parents=True)
        (t / "task.yaml").write_text(f"category: c\n{own}predicates: [{{id: p, kind: file_exists, path: x}}]\n")
        (t / "prompt.md").write_text("do it\n")
    suite = load_suite(tmp_path)
    envs = {t.id: t.spec.environment for t in suite.tasks}
    assert envs["plain"] is not None and envs["plain"].packages == ["jq"]
    assert envs["own"] is not None and envs["own"].packages == ["gawk"]


def test_from_platform_is_honoured_where_it_names_this_machine() -> None:
    """Terminal-Bench's DevEval tasks start ``FROM --platform=linux/amd64 …``: this machine's
    platform (or Docker's own ``$BUILDPLATFORM``) is honoured and kept, another is refused by name."""
    from assay.spec.environment_dockerfile import host_platform
    host = host_platform()
    for flag in (f"--platform={host}", "--platform=$BUILDPLATFORM", "--platform=${TARGETPLATFORM}",
                 f"--platform={host.upper()}"):
        df = parse(DF, f"FROM {flag} python:3.10-slim AS base\nRUN true\n")
        assert (df.from_image, df.platform, [s.kind for s in df.steps]) == ("python:3.10-slim", host, ["run"]), flag
    assert parse(DF, "FROM debian:bookworm\n").platform == ""
    other = "linux/s390x" if host != "linux/s390x" else "linux/amd64"
    with pytest.raises(DockerfileError) as e:
        parse(DF, f"# a comment\nFROM --platform={other} debian:bookworm\n")
    assert e.value.line == 2 and other in str(e.value) and host in str(e.value) and "no emulation" in str(e.value)
    for bad in ("FROM --platform debian:bookworm\n", "FROM --pull=always debian:bookworm\n", "FROM --platform=\n"):
        with pytest.raises(DockerfileError) as e:
            parse(DF, bad)
        assert e.value.line == 1 and "--p" in str(e.value), str(e.value)


def test_uv_copied_from_its_image_is_uv_from_pypi_at_that_version(tmp_path: Path) -> None:
    """16 of a real Harbor collection's 74 tasks (wxj630/terminal-bench-math-modeling) start with
    `COPY --from=ghcr.io/astral-sh/uv:0.8.15 /uv /uvx /usr/local/bin/`: that image cannot be
    fetched here, the same uv is a PyPI wheel. The step installs it and copies its binaries, and
    says so; any other `COPY --from` is refused as before."""
    import subprocess
    import sys

    text = "FROM python:3.12-slim\nCOPY --from=ghcr.io/astral-sh/uv:0.8.15 /uv /uvx /usr/local/bin/\nWORKDIR /root\n"
    [step, _] = parse(DF, text).steps
    assert step.kind == "run" and step.line == 2 and "uv==0.8.15" in step.argv[2]
    assert "uv 0.8.15 from PyPI" in step.deviation
    [one] = [s for s in parse(DF, "FROM debian:bookworm\nCOPY --from=astral/uv:latest /uv /bin/uv\n").steps]
    assert "--target /tmp/.assay-uv uv &&" in one.argv[2] and "cp /tmp/.assay-uv/bin/uv /bin/uv" in one.argv[2]
    assert "newest uv" in one.deviation
    for bad in ("COPY --from=ghcr.io/astral-sh/uv:0.8.15 /etc/passwd /x", "COPY --from=python:3.12 /usr/bin/python3 /x",
                "COPY --from=ghcr.io/astral-sh/uv:0.8.15 --chown=1 /uv /x"):
        with pytest.raises(DockerfileError, match="--"):
            parse(DF, f"FROM debian:bookworm\n{bad}\n")
    # what the builder runs: the wheel's own uv, at that version, in the destination
    dest = tmp_path / "bin"
    script = step.argv[2].replace("/usr/local/bin/", f"{dest}/").replace("python3 -m pip", f"{sys.executable} -m pip")
    done = subprocess.run(["/bin/sh", "-c", script.replace("/tmp/.assay-uv", str(tmp_path / "wheel"))],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    out = subprocess.run([str(dest / "uv"), "--version"], capture_output=True, text=True, timeout=60)
    assert out.stdout.split()[:2] == ["uv", "0.8.15"] and (dest / "uvx").is_file()


def test_env_path_extended_with_dollar_path_keeps_the_systems_path() -> None:
    """`ENV PATH="/opt/venv/bin:$PATH"` (53 of TermiGen's tasks, a real math-modelling collection's
    uv tasks) must keep /usr/bin: read as empty, every later RUN lost its tools ("uv: not found")."""
    df = parse(DF, 'FROM python:3.12-slim\nENV VIRTUAL_ENV=/opt/venv\nENV PATH="$VIRTUAL_ENV/bin:$PATH"\n'
                   "ENV PATH=/opt/tools/bin:${PATH}\n")
    paths = [dict(s.env)["PATH"] for s in df.steps if s.kind == "env" and "PATH" in dict(s.env)]
    assert paths == ["/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                     "/opt/tools/bin:/opt/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]


@pytest.mark.parametrize("base", ["ghcr.io/laude-institute/t-bench/python-3-13:20250620",
                                  "ghcr.io/laude-institute/t-bench/ubuntu-24-04:20250624",
                                  "ghcr.io/laude-institute/t-bench/ubuntu-24-04:latest"])
def test_terminal_benchs_base_images_bring_their_workdir(tmp_path: Path, base: str) -> None:
    """Terminal-Bench's two base images set `WORKDIR /app`, and real tasks rely on it: a Harbor
    task with no WORKDIR of its own whose oracle writes /app/output.txt, a Terminal-Bench task
    that does `COPY run_pipeline.sh .`. Mapped to Debian, the image keeps that workdir (said as
    a deviation), so the workspace is /app and a relative COPY lands there, as under Docker."""
    from assay.environments.plan import plan_for

    df = parse(DF, f"FROM {base}\nCOPY run.sh .\nRUN pip install pytest==8.4.2\n")
    assert [(s.kind, s.dest) for s in df.steps][:2] == [("workdir", "/app"), ("copy", "/app/.")]
    (tmp_path / "Dockerfile").write_text(f"FROM {base}\nCOPY run.sh .\n")
    (tmp_path / "run.sh").write_text("true\n")
    plan = plan_for("t", tmp_path, EnvironmentSpec(dockerfile="Dockerfile"))
    assert plan.workdir == "/app"
    assert any("WORKDIR /app" in d and base in d for d in plan.deviations), plan.deviations
    # the task's own WORKDIR still wins, and any other image brings none
    assert plan_for("t", tmp_path, EnvironmentSpec(dockerfile="Dockerfile")).workdir == "/app"
    (tmp_path / "Dockerfile").write_text(f"FROM {base}\nWORKDIR /srv\n")
    assert plan_for("t", tmp_path, EnvironmentSpec(dockerfile="Dockerfile")).workdir == "/srv"
    (tmp_path / "Dockerfile").write_text("FROM ubuntu:24.04\nRUN true\n")
    assert plan_for("t", tmp_path, EnvironmentSpec(dockerfile="Dockerfile")).workdir is None
