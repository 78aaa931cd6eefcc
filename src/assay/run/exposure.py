"""``assay validate --exposure``: what an agent can actually see, measured in its real sandbox.

Law 2 says hidden tests, expected values and verifier code never enter the agent's sandbox; no
reading of the code proves it, so this audit looks. For every task, variant and agent kind it
runs the exposure probe (:mod:`assay.agents.probe`) through the real run engine, so the sandbox
is exactly the one that agent would get: its mounts, the task's setup, the variant's ``env:``,
the worlds' endpoints, a conversation's session. Then it holds what the probe saw against what
the harness knows of the task, and fails on any of:

- a file of the task that is not the agent's (``task.yaml``, ``hidden/``, ``solution/``,
  ``verify/``, the model script, the setup script and its files), found by digest anywhere;
- an expected value of a predicate (a literal of its pattern, its text, its command) in the
  agent's environment or in a readable file;
- a mount whose source leads back to the task or its suite, or into the run directory or the
  harness scratch other than the attempt's own workspace, home and staged copies;
- a host path the harness binds unwalked (the system, the Python install, an agent's install
  folder) that holds the task, the suite or the run directory.
An audit that saw nothing (no probe ran) does not pass.
"""

from __future__ import annotations

import hashlib
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

from assay.agents.base import AgentAdapter
from assay.agents.builtin import SOLUTION_MOUNT, OracleAgent
from assay.agents.probe import ProbeAgent, ProbeSighting
from assay.agents.registry import register_agent, resolve_agent
from assay.records.results import AttemptResult, EndState
from assay.run.exposure_values import expected_values, regular_files
from assay.run.task_staging import private_parts
from assay.run.runner import RunOptions, start_run
from assay.spec.budget import NetworkProfile
from assay.spec.load import LoadedSuite, LoadedTask, load_suite

#: task files smaller than this are too common to be told apart by digest (an empty file)
MIN_SECRET_BYTES = 8


@dataclass(frozen=True)
class Leak:
    """One thing an agent could reach that it must not."""

    task_id: str
    variant: str
    agent: str
    kind: str  # task_file | expected_value | mount | vouched_path | probe
    path: str  # where the agent sees it (inside the sandbox), or the host path for vouched_path
    what: str  # which task file, predicate field or folder it is

    def line(self) -> str:
        return f"{self.task_id} [{self.variant}] as {self.agent}: {self.kind} {self.path!r}: {self.what}"


@dataclass
class ExposureReport:
    suite: str
    leaks: list[Leak] = field(default_factory=list)
    audited: list[tuple[str, str, str]] = field(default_factory=list)  # (task, variant, agent) probed
    not_audited: list[str] = field(default_factory=list)  # agent kinds that could not be probed, and why

    @property
    def ok(self) -> bool:
        return bool(self.audited) and not self.leaks


# ------------------------------------------------------------------------------ what is private
def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def image_given(task: LoadedTask) -> set[Path]:
    """The task files its environment copies into the image (``COPY``/``ADD``): the agent's by
    design, unless they are private parts of the task (then a copy is a leak like any other)."""
    env = getattr(task.spec, "environment", None)
    if env is None:
        return set()
    from assay.environments.plan import plan_for

    plan = plan_for(task.id, task.dir, env)
    given = {f.resolve() for op in plan.ops if op.kind == "copy" for src in op.sources for f in regular_files(src)}
    return given - {f for f in given if any(f.is_relative_to(p) for p in private_parts(task))}


def task_secrets(task: LoadedTask) -> dict[str, str]:
    """Digest -> task-relative path of every file of the task folder the agent must not read:
    all but its workspace fixture, its prompts and what its image is built with (and files whose
    bytes the agent is given)."""
    spec = task.spec
    given = {(task.dir / spec.prompt_file).resolve(), *((task.dir / v.prompt_file).resolve()
                                                         for v in spec.variants if v.prompt_file), *image_given(task)}
    workspace = (task.dir / spec.workspace).resolve()
    given_digests = {_digest(p) for p in regular_files(workspace)} | {_digest(p) for p in given if p.is_file()}
    out: dict[str, str] = {}
    for p in regular_files(task.dir):
        rp = p.resolve()
        if rp in given or rp.is_relative_to(workspace) or p.stat().st_size < MIN_SECRET_BYTES:
            continue
        d = _digest(p)
        if d not in given_digests:
            out.setdefault(d, str(p.relative_to(task.dir)))
    return out


# ------------------------------------------------------------------------------ mounts
@dataclass(frozen=True)
class FsPath:
    """A host path as a mount table names it: the filesystem's device and the path within it."""

    dev: str
    path: str


def _unescape(field_: str) -> str:
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field_)


def mount_rows(mountinfo: str) -> list[tuple[str, str, str]]:
    """(device major:minor, root within the filesystem, mount point) of every mountinfo line."""
    rows = []
    for line in mountinfo.splitlines():
        parts = line.split()
        if len(parts) > 4:
            rows.append((parts[2], _unescape(parts[3]), _unescape(parts[4])))
    return rows


def host_fs_path(path: Path, host_rows: list[tuple[str, str, str]]) -> FsPath | None:
    """Where ``path`` lies as the host's mount table says: its filesystem and the path within."""
    p = str(path.resolve())
    best: tuple[str, str, str] | None = None
    for dev, root, point in host_rows:
        if (p == point or p.startswith(point.rstrip("/") + "/")) and (best is None or len(point) >= len(best[2])):
            best = (dev, root, point)
    if best is None:
        return None
    dev, root, point = best
    rest = p[len(point.rstrip("/")):]
    return FsPath(dev, (root.rstrip("/") + rest) or "/")


def _related(a: str, b: str) -> bool:
    """Whether one path is the other or lies inside it (either way round)."""
    return a == b or a.startswith(b.rstrip("/") + "/") or b.startswith(a.rstrip("/") + "/")


def _inside(a: str, b: str) -> bool:
    return a == b or a.startswith(b.rstrip("/") + "/")


def mount_leaks(sighting: ProbeSighting, private: dict[str, FsPath], own: FsPath | None,
                harness: dict[str, FsPath]) -> Iterator[tuple[str, str]]:
    """(mount point, what it leads to) for every mount of the sandbox whose source is or holds a
    private host folder, or lies in a harness folder (the run directory, the scratch of every
    attempt) outside the attempt's own scratch."""
    report = sighting.report or {}
    for dev, root, point in mount_rows(str(report.get("mountinfo", ""))):
        if own is not None and dev == own.dev and _inside(root, own.path):
            continue  # the attempt's own workspace, home and staged copies
        for what, fp in private.items():
            if dev == fp.dev and _related(root, fp.path):
                yield point, f"its source {root!r} leads to {what}"
        for what, fp in harness.items():
            if dev == fp.dev and _related(root, fp.path):
                yield point, f"its source {root!r} is in {what}, outside this attempt's own scratch"


# ------------------------------------------------------------------------------ findings
def sighting_leaks(s: ProbeSighting, task: LoadedTask, secrets: dict[str, str], values: dict[str, str],
                   private: dict[str, FsPath], own: FsPath | None, harness: dict[str, FsPath]) -> list[Leak]:
    def leak(kind: str, path: str, what: str) -> Leak:
        return Leak(s.task_id, s.variant, s.agent, kind, path, what)

    if s.report is None:
        return [leak("probe", "-", f"the probe saw nothing: {s.error}")]
    allowed = [t for t in s.allowed_targets]
    out: list[Leak] = []
    files = [f for f in s.report.get("files", []) if isinstance(f, dict) and isinstance(f.get("path"), str)
             and not any(_inside(f["path"], t) for t in allowed)]
    for f in files:
        if f.get("sha256") in secrets:
            out.append(leak("task_file", f["path"], f"holds the task's {secrets[f['sha256']]}"))
    env = s.report.get("env", {})
    texts = [(f"${k}", f"{k}={v}") for k, v in (env.items() if isinstance(env, dict) else [])]
    texts += [(f["path"], f["text"]) for f in files if isinstance(f.get("text"), str)]
    for value, where in values.items():
        for path, text in texts:
            if value in text:
                out.append(leak("expected_value", path, f"holds {where} ({value[:60]!r})"))
    for point, what in mount_leaks(s, private, own, harness):
        out.append(leak("mount", point, what))
    if s.report.get("truncated"):
        out.append(leak("probe", "/", "the probe's walk was cut at its file bound: not everything was seen"))
    return out


def vouched_leaks(s: ProbeSighting, private_host: dict[str, Path]) -> list[Leak]:
    """A host path bound unwalked (system, Python install, agent install) holding a private folder."""
    out = []
    for v in s.vouched:
        for what, p in private_host.items():
            if _inside(str(p.resolve()), str(v.resolve())):
                out.append(Leak(s.task_id, s.variant, s.agent, "vouched_path", str(v),
                                f"bound read-only into every sandbox and holds {what} ({p})"))
    return out


# ------------------------------------------------------------------------------ the audit
def default_agents() -> tuple[list[AgentAdapter], list[str]]:
    """Every agent kind that can run here (oracle, reference, a command agent, each installed
    product), and the kinds that cannot, with why."""
    from assay.agents.command import CommandAgent
    from assay.agents.products import PRODUCTS

    agents: list[AgentAdapter] = [OracleAgent(), resolve_agent("reference"),
                                  CommandAgent({"name": "command", "kind": "command", "command": ["true"]})]
    skipped = []
    for name in PRODUCTS.names():
        adapter = resolve_agent(name)
        info = adapter.info()
        if info.usable:
            agents.append(adapter)
        else:
            skipped.append(f"{name}: not probed ({info.detail})")
    return agents, skipped


def _host_rows() -> list[tuple[str, str, str]]:
    try:
        return mount_rows(Path("/proc/self/mountinfo").read_text())
    except OSError:
        return []


def audit_exposure(suite_path: Path, *, agents: list[AgentAdapter] | None = None, sandbox: str | None = None,
                   jobs: int = 1, keep: Path | None = None, model: str | None = None) -> ExposureReport:
    """Probe every task, variant and agent kind of the suite in its real sandbox; report leaks."""
    suite = load_suite(suite_path)
    report = ExposureReport(suite.spec.name)
    if agents is None:
        agents, report.not_audited = default_agents()
    probes = [ProbeAgent(a, (SOLUTION_MOUNT,) if isinstance(a, OracleAgent) else ()) for a in agents]
    for p in probes:
        register_agent(p.name, lambda _cfg, p=p: p, replace=True)
    with tempfile.TemporaryDirectory(prefix="assay-exposure-") as tmp:
        out = keep or Path(tmp) / "run"
        outcome = start_run(RunOptions(suite=suite_path, agents=[p.name for p in probes], out=out, sandbox=sandbox,
                                       network=NetworkProfile.harness, max_retries=0, jobs=jobs, model=model,
                                       run_id=f"exposure-{suite.spec.name}"))
        sightings = [s for p in probes for s in p.sightings]
        report.leaks, report.audited = judge_sightings(suite, sightings, out)
        report.leaks += unprobed(outcome.results, sightings)
    return report


def unprobed(results: list[AttemptResult], sightings: list[ProbeSighting]) -> list[Leak]:
    """Every attempt whose sandbox the probe never saw (the sandbox could not be made, the setup
    failed): what an agent would see there is unknown, and unknown is no pass."""
    seen = {(s.task_id, s.variant, s.agent) for s in sightings}
    return [Leak(r.task_id, r.variant, r.agent, "probe", "-", f"not probed: {r.end_state.value}"
                 f"{f' ({r.reason})' if r.reason else ''}: {'; '.join(r.errors)[-300:]}")
            for r in results if (r.task_id, r.variant, r.agent) not in seen and r.end_state is not EndState.skipped]


def judge_sightings(suite: LoadedSuite, sightings: list[ProbeSighting],
                    run_dir: Path) -> tuple[list[Leak], list[tuple[str, str, str]]]:
    """Every leak in what the probes saw (one function, whatever ran them)."""
    rows = _host_rows()
    tasks = {t.id: t for t in suite.tasks}
    leaks: list[Leak] = []
    audited = []
    cache: dict[str, Any] = {}
    for s in sightings:
        task = tasks[s.task_id]
        if task.id not in cache:
            private_host = {"the task folder": task.dir, "the suite folder": suite.root}
            cache[task.id] = (task_secrets(task), expected_values(task), private_host,
                              {k: fp for k, v in private_host.items() if (fp := host_fs_path(v, rows))})
        secrets, values, private_host, private = cache[task.id]
        own = host_fs_path(s.scratch, rows) if s.scratch else None
        folders = {"the run directory": run_dir, **({"the harness scratch": s.scratch.parent.parent} if s.scratch else {})}
        harness = {k: fp for k, v in folders.items() if (fp := host_fs_path(v, rows))}
        leaks += sighting_leaks(s, task, secrets, values, private, own, harness)
        leaks += vouched_leaks(s, private_host)
        audited.append((s.task_id, s.variant, s.agent))
    return leaks, audited
