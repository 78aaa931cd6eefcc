"""What every format's importer shares: task ids, the task folder assay reads, the Dockerfile's
base mapping named in the report, and test scripts that fetch from the network at test time."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path
from typing import Any

import yaml

from assay.environments.plan import map_from, plan_for
from assay.environments.stage_release import SAID
from assay.importers.report import TaskReport
from assay.spec.environment import EnvironmentSpec
from assay.spec.environment_dockerfile import DockerfileError, parse
from assay.spec.task_metadata import Author, TaskMetadata, metadata_from

#: a test script line that reaches the network when the tests run (the verifier has none here)
_FETCH = re.compile(r"\b(curl|wget|apt-get\s+(update|install)|apt\s+install|pip3?\s+(install|download)|"
                    r"uv\s+(add|init|pip|run|sync|tool)|uvx|npm\s+(install|i|ci)|npx|yarn|pnpm|git\s+clone|"
                    r"go\s+(get|install|mod\s+download)|cargo\s+(install|fetch)|gem\s+install)(?![\w=])")
#: the base a Dockerfile's FROM maps to when that image cannot be fetched here (the importer's choice)
DEFAULT_BASE = "debian:bookworm"


def table(doc: Any, key: str) -> dict[str, Any]:
    """A TOML table of ``doc`` by key, {} when it is absent or not a table (a format's optional table)."""
    v = doc.get(key, {}) if isinstance(doc, dict) else {}
    return v if isinstance(v, dict) else {}


def names_reward(tests: Path) -> bool:
    """Whether any test file names a reward file (test.sh may source a helper that writes it)."""
    for p in tests.rglob("*"):
        if p.is_file() and not p.is_symlink() and p.stat().st_size < (1 << 20):
            text = p.read_text(errors="replace")
            if "reward.txt" in text or "reward.json" in text:
                return True
    return False


def seconds(value: Any, field: str) -> float:
    """A format's timeout field as seconds: a positive, finite number (a numeric string too, never
    a bool); a ValueError naming the field otherwise, so that task is left out with its reason."""
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            raise ValueError
        out = float(value)
    except ValueError:
        raise ValueError(f"{field} {value!r} is not a number of seconds") from None
    if not math.isfinite(out) or out <= 0:
        raise ValueError(f"{field} {value!r} is not a positive number of seconds")
    return out


def resource(value: Any, field: str) -> float | None:
    """A format's resource amount (CPUs, MiB) as given: a positive number, or None for 0, which
    Docker reads as "no limit" (the caller says in the report that assay's default applies); a
    ValueError naming the field for anything else, so that task is left out with its reason."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{field} = {value!r} is not a resource amount (a number, 0 or more)")
    return None if value == 0 else value


def task_id(name: str) -> str:
    """A source folder name as an assay task id (lowercase, ``[a-z0-9_-]``, at most 64)."""
    s = re.sub(r"[^a-z0-9_-]+", "-", name.lower()).strip("-_")[:64]
    return s or "task"


def network_lines(script: Path) -> list[str]:
    """The lines of a test script that fetch at test time, as ``name:line: text``."""
    out = []
    for n, line in enumerate(script.read_text(errors="replace").splitlines(), 1):
        code = line.split("#", 1)[0]
        if _FETCH.search(code):
            out.append(f"{script.name}:{n}: {line.strip()}")
    return out


def solution_fetches(script: Path, rep: TaskReport, label: str = "solution/solve.sh") -> None:
    """Say in the report when the reference solution fetches from the network: the agent's sandbox
    has none here (nor root, which apt-get wants), so an oracle that fails there is labelled
    ``needs`` network by the audit, not unsolvable as shipped."""
    fetches = network_lines(script) if script.is_file() else []
    if fetches:
        rep.unmapped.append(f"{label} fetches from the network (" + "; ".join(fetches[:3]) + "); the agent's "
                            "sandbox has no network here, so the reference solution may fail")


def dockerfile_environment(task_out: Path, dockerfile: Path, context: Path, rep: TaskReport,
                           build_timeout_s: float | None = None, *, into: str = "environment",
                           label: str = "") -> dict[str, Any] | None:
    """Copy a Dockerfile and its build context into ``task_out/into`` and return the task's
    ``environment:`` (or ``verifier_environment:``, ``label`` prefixing what the report says of
    it); the FROM mapping goes into the report. None (task refused) when assay's Dockerfile
    reader refuses a line."""
    try:
        df = parse(dockerfile)
    except DockerfileError as e:
        rep.refuse(f"{label}Dockerfile refused by assay's reader: {e} ({e.fix})")
        return None
    except (OSError, UnicodeDecodeError) as e:
        rep.refuse(f"{label}Dockerfile unreadable: {e}")
        return None
    env_dir = task_out / into
    shutil.copytree(context, env_dir, symlinks=True, dirs_exist_ok=True)
    if dockerfile.parent != context or dockerfile.name != "Dockerfile":
        shutil.copy2(dockerfile, env_dir / "Dockerfile")
    spec: dict[str, Any] = {"dockerfile": f"{into}/Dockerfile", "context": into, "base": DEFAULT_BASE}
    if build_timeout_s:
        spec["build_timeout_s"] = build_timeout_s
    _, extra, deviation = map_from(df.from_image, EnvironmentSpec(**spec))
    rep.mapped.append(f"{label}Dockerfile -> {into}/Dockerfile (built by assay's image builder)")
    if deviation:
        rep.approximated.append(label + deviation)
    for stage in df.stages:  # a builder stage's FROM is read the same way, and said with its name
        said = map_from(stage.from_image, EnvironmentSpec(**spec))[2]
        if said and stage.from_stage is None:
            rep.approximated.append(f"{label}stage {stage.name or '(unnamed)'}: {said}")
    rep.approximated += [label + d for d in (*(s.deviation for s in df.every_step() if s.deviation), *df.not_applied)]
    try:  # stages moved to one release, packages it dropped: known once the whole file is planned (nothing hashed)
        planned = plan_for(into, task_out, EnvironmentSpec(**spec)).deviations
    except (DockerfileError, OSError, ValueError):
        planned = ()  # a COPY source missing: the build will name it
    rep.approximated += [label + d for d in planned if any(s in d for s in SAID)]
    return spec


def bash_when_bare(written: Path, label: str, rep: TaskReport, runner: str = "Harbor") -> None:
    """``written`` (an imported copy of the script ``label``) started with ``#!/bin/bash`` when it has
    no ``#!`` line, said: ``runner`` runs it from bash, which runs such a file as bash, where assay
    runs a script by its ``#!`` line, else /bin/sh (dash: no ``set -o pipefail``, no ``[[``)."""
    try:
        data = written.read_bytes()
    except OSError:
        return
    if data.startswith(b"#!"):
        return
    written.write_bytes(b"#!/bin/bash\n" + data)
    rep.approximated.append(f"{label} has no #! line: #!/bin/bash put first ({runner} runs it with bash)")


def copy_dir(src: Path, dst: Path) -> None:
    """A source folder copied as it is (links kept as links, never followed)."""
    shutil.copytree(src, dst, symlinks=True)


def write_task(task_out: Path, task: dict[str, Any], prompt: str, rep: TaskReport) -> None:
    """task.yaml and prompt.md; an empty workspace (the image's WORKDIR files are seeded in).
    What was approximated or could not map goes into the task's ``deviations`` too, so the run's
    manifest carries it beside the results."""
    flags = [*rep.approximated, *(f"could not map: {u}" for u in rep.unmapped)]
    if flags:
        task["deviations"] = [*task.get("deviations", []), *flags]
    (task_out / "workspace").mkdir(parents=True, exist_ok=True)
    (task_out / "prompt.md").write_text(prompt if prompt.endswith("\n") else prompt + "\n")
    (task_out / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False, allow_unicode=True))


def typed_metadata(task: dict[str, Any], source: dict[str, Any], rep: TaskReport,
                   authors: Any = None) -> None:
    """The task's typed ``metadata:`` (difficulty, authors, time estimates) from the source's
    fields; a value that is not what its name says is named in the report and left out."""
    meta, problems = metadata_from(source)
    extra = _authors(authors)
    if extra:
        meta = (meta or TaskMetadata()).model_copy(update={"authors": [*(meta.authors if meta else []), *extra]})
    if meta is not None:
        task["metadata"] = meta.model_dump(exclude_none=True, exclude_defaults=True)
    rep.unmapped += [f"metadata: {p}" for p in problems]


def _authors(value: Any) -> list[Author]:
    """Harbor's ``[task].authors``: names, or tables with a name and maybe an email."""
    out = []
    for a in value if isinstance(value, list) else []:
        if isinstance(a, str) and a.strip():
            out.append(Author(name=a.strip()))
        elif isinstance(a, dict) and isinstance(a.get("name"), str) and a["name"].strip():
            email = a.get("email")
            out.append(Author(name=a["name"].strip(), email=email if isinstance(email, str) and email else None))
    return out


def metadata(source: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """The source's descriptive fields kept as they are (difficulty, author, time estimates, ...)."""
    return {k: source[k] for k in keys if source.get(k) not in (None, "", [])}
