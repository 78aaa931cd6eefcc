"""The head's harness services for attempts that run on other nodes (the Ray executor).

The model gateway, the worlds and the judge are started once, on the head, by a
:class:`ServiceHub` (a Ray actor pinned to the head node; plain Python here). A worker opens an
attempt's sessions through a :class:`HubProxy` standing in for each service: the hub opens the
real session (per-attempt key, budget meter, faults, prices: the same code as a local run) and
hands back what the sandbox needs (endpoints, env, wiring); closing returns the session's
report, the trace events the service recorded, the budgets that refused and the files it kept,
as data. Model calls from any node therefore go through the one harness-owned gateway, and the
hub writes nothing of the run directory (its files live under its own temp folder).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Awaitable, Callable

import httpx

from assay.harness.budget import BudgetMeter
from assay.harness.services import AttemptHandle, HarnessService, ServiceSession, SessionReport
from assay.harness.wiring import WorldToolContract, Wiring
from assay.judge.service import JudgeConnection
from assay.records.incident import Incident
from assay.records.manifest import RunManifest
from assay.records.results import UsageTotals
from assay.records.verifier_inputs import VerifierInputs
from assay.run.budget_stop import judge_totals
from assay.run.parts import build_services
from assay.run_budget.meter import RunBudgetMeter, RunSpend
from assay.sandbox.base import Endpoint
from assay.spec.budget import BudgetName
from assay.run.controls_run import suite_of_run
from assay.spec.load import LoadedSuite
from assay.trace.events import TraceEvent
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter

#: the address workers reach the head's services on (the services listen there); a service
#: bound to every interface is advertised under this address
ADVERTISE_ENV = "ASSAY_SERVICES_ADVERTISE"
ANY_ADDRESS = ("0.0.0.0", "::", "")

#: calls a hub method by name (through Ray, or directly in-process)
HubCall = Callable[..., Awaitable[Any]]


@dataclass(frozen=True)
class AttemptKey:
    """Which attempt a session belongs to (what the hub needs to rebuild its handle)."""

    trial_id: str
    attempt: int
    task_id: str
    variant: str
    agent: str

    @property
    def id(self) -> str:
        return f"{self.trial_id}#{self.attempt}"


@dataclass(frozen=True)
class Opened:
    """A session as the worker's sandbox reaches it."""

    endpoints: tuple[Endpoint, ...]
    env: dict[str, str]
    wiring: Wiring
    #: files the session made in the attempt's scratch (a canary in the workspace, the tool shim
    #: in the home), path relative to the scratch folder -> (bytes, mode): the worker writes them
    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)
    secrets: dict[str, str] = field(default_factory=dict)  # name -> value, for the worker's redactor


@dataclass(frozen=True)
class Closed:
    """A closed session's report, with its files as bytes (path relative to the trial folder)."""

    usage: UsageTotals | None
    incidents: tuple[Incident, ...]
    budget_exceeded: tuple[str, ...]
    verifier_extra: VerifierInputs
    files: dict[str, str]  # report name -> path relative to the trial folder
    extra: dict[str, Any]
    blobs: dict[str, bytes] = field(default_factory=dict)  # path relative to the trial folder -> bytes
    events: tuple[TraceEvent, ...] = ()  # what the service recorded since the last close
    hits: tuple[BudgetName, ...] = ()  # budgets that refused, in order


@dataclass
class _HubAttempt:
    handle: AttemptHandle
    trial_dir: Path
    sessions: dict[int, ServiceSession] = field(default_factory=dict)
    sent: int = 0  # events already handed back


def advertised(endpoint: Endpoint, address: str | None) -> Endpoint:
    """A service bound to every interface is reached on the head's address."""
    if endpoint.host in ANY_ADDRESS and address:
        return replace(endpoint, host=address)
    return endpoint


def advertised_judge(value: Any, address: str | None) -> Any:
    """The judge's connection as a verifier on another node reaches it: a judge gateway bound to
    every interface (``ASSAY_GATEWAY_HOST=0.0.0.0``) is addressed on the head's address."""
    if not isinstance(value, JudgeConnection) or not address:
        return value
    url = httpx.URL(value.url)
    return replace(value, url=str(url.copy_with(host=address))) if url.host in ANY_ADDRESS else value


class ServiceHub:
    """Runs the run's harness services for attempts on any node (one per campaign, on the head)."""

    def __init__(self, manifest_json: str, *, address: str | None = None, root: Path | None = None,
                 run_budget: RunSpend | None = None, run_dir: str | None = None):
        self.manifest = RunManifest.model_validate_json(manifest_json)
        # the run-wide budget's one meter: every node's model calls pass this hub's gateway, so
        # it admits and settles them all; it starts from what the head found already spent
        self.run_meter = None if run_budget is None else RunBudgetMeter(
            run_budget.limits, cost_usd=run_budget.cost_usd, tokens=run_budget.tokens, estimate=run_budget.estimate)
        self.suite: LoadedSuite = suite_of_run(self.manifest)
        self.services: list[HarnessService] = build_services(self.manifest)
        for svc in self.services:  # the approval stores stay in the run directory, where a person decides
            if run_dir is not None and hasattr(svc, "approvals_root"):
                svc.approvals_root = Path(run_dir)
        self.address = address or os.environ.get(ADVERTISE_ENV)
        self.root = root or Path(tempfile.mkdtemp(prefix="assay-hub-"))
        self._attempts: dict[str, _HubAttempt] = {}

    async def start(self) -> dict[str, Any]:
        """Start every service; returns their names and each task's world tool contracts."""
        for svc in self.services:
            await svc.start()
        contracts: dict[str, list[WorldToolContract | None]] = {
            t.id: [svc.tool_contract(t) for svc in self.services] for t in self.suite.tasks}
        return {"services": [svc.name or type(svc).__name__ for svc in self.services], "contracts": contracts}

    async def stop(self) -> None:
        for key in list(self._attempts):
            await self.abandon(key)
        try:
            for svc in self.services:
                await svc.stop()
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

    def _secrets(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for svc in self.services:
            out.update(getattr(svc, "secrets", lambda: {})())
        return out

    def _attempt(self, key: AttemptKey, contract: WorldToolContract | None) -> _HubAttempt:
        state = self._attempts.get(key.id)
        if state is None:
            task = self.suite.task(key.task_id)
            trial_dir = self.root / "trials" / key.trial_id
            red = Redactor(self._secrets())
            trace = TraceWriter(trial_dir / "hub.trace.jsonl", key.trial_id, redactor=red, buffered=True)
            trace.attempt = key.attempt
            handle = AttemptHandle(run_id=self.manifest.run_id, trial_id=key.trial_id, attempt=key.attempt, task=task,
                                   variant=key.variant, agent=key.agent, trace=trace, redactor=red,
                                   budget=task.spec.budget, attempt_dir=trial_dir / "attempts" / str(key.attempt),
                                   scratch=self.root / "scratch" / key.trial_id / str(key.attempt),
                                   meter=BudgetMeter(task.spec.budget, self.run_meter), world_tools=contract)
            handle.attempt_dir.mkdir(parents=True, exist_ok=True)
            state = self._attempts[key.id] = _HubAttempt(handle, trial_dir)
        return state

    async def open(self, key: AttemptKey, index: int) -> Opened | None:
        """Open service ``index``'s session for the attempt (None: the attempt does not use it)."""
        contract = next((c for c in self.start_contracts(key.task_id) if c is not None), None)
        state = self._attempt(key, contract)
        sess = await self.services[index].open(state.handle)
        if sess is None:
            return None
        state.sessions[index] = sess
        return Opened(tuple(advertised(e, self.address) for e in sess.endpoints), dict(sess.env), sess.wiring(),
                      _take_made_files(state.handle.scratch), state.handle.redactor.known())

    def start_contracts(self, task_id: str) -> list[WorldToolContract | None]:
        task = self.suite.task(task_id)
        return [svc.tool_contract(task) for svc in self.services]

    async def close(self, key: AttemptKey, index: int) -> Closed:
        """Close the session and hand back everything it produced, as data."""
        state = self._attempts[key.id]
        sess = state.sessions.pop(index)
        report: SessionReport = await sess.close()
        events = state.handle.trace.events()
        fresh, state.sent = tuple(events[state.sent:]), len(events)
        files: dict[str, str] = {}
        blobs: dict[str, bytes] = {}
        for name, path in report.files.items():
            if path.is_file() and not path.is_symlink() and path.is_relative_to(state.trial_dir):
                rel = path.relative_to(state.trial_dir).as_posix()
                files[name], blobs[rel] = rel, path.read_bytes()
        own = state.handle.attempt_dir.relative_to(state.trial_dir).as_posix() + "/"
        for path in state.trial_dir.rglob("*"):  # the services' other files (an approval store...)
            rel = path.relative_to(state.trial_dir).as_posix()
            earlier = rel.startswith("attempts/") and not rel.startswith(own)  # sent with their own attempt
            if (path.is_file() and not path.is_symlink() and rel not in blobs and not earlier
                    and path.name != "hub.trace.jsonl"):
                blobs[rel] = path.read_bytes()
        if not state.sessions:
            self._attempts.pop(key.id, None)
        extra = replace(report.verifier_extra, judge=advertised_judge(report.verifier_extra.judge, self.address))
        return Closed(report.usage, tuple(report.incidents), tuple(report.budget_exceeded), extra,
                      files, dict(report.extra), blobs, fresh, tuple(state.handle.budget_meter.hits))

    async def judge_spend(self) -> UsageTotals | None:
        """What the run's judge (started here, with the other services) spent this session."""
        return judge_totals(self.services)

    async def run_spend(self) -> RunSpend | None:
        """The run budget's meter as it stands (None: the run has no run budget)."""
        return None if self.run_meter is None else self.run_meter.snapshot()

    async def abandon(self, key_id: str) -> dict[str, bytes]:
        """The attempt's worker is gone: close what it left open (its keys stop working) and hand
        back the files its sessions kept for it (the gateway's recording: what it spent, which a
        resume counts), path relative to the trial folder."""
        state = self._attempts.pop(key_id, None)
        if state is None:
            return {}
        for sess in state.sessions.values():
            try:
                await sess.close()
            except Exception:  # noqa: BLE001 - nothing of a lost attempt is kept but its closure
                pass
        own = state.handle.attempt_dir
        return {p.relative_to(state.trial_dir).as_posix(): p.read_bytes() for p in sorted(own.rglob("*"))
                if p.is_file() and not p.is_symlink()}


#: the parts of an attempt's scratch folder a session may put files in for the sandbox
MADE_IN = ("workspace", "home")


def _take_made_files(scratch: Path) -> dict[str, tuple[bytes, int]]:
    """What a session wrote into the attempt's scratch on the hub, moved out to be sent."""
    out: dict[str, tuple[bytes, int]] = {}
    for part in MADE_IN:
        for p in sorted((scratch / part).rglob("*")) if (scratch / part).is_dir() else []:
            if p.is_file() and not p.is_symlink():
                out[p.relative_to(scratch).as_posix()] = (p.read_bytes(), p.stat().st_mode & 0o777)
                p.unlink()
    return out


def _put_made_files(scratch: Path, files: dict[str, tuple[bytes, int]]) -> None:
    """Write the files a session made into this node's scratch; a path leaving the workspace or
    the home, or through a link, is refused (the hub is trusted, the workspace's contents not)."""
    root = scratch.resolve()
    for rel, (data, mode) in sorted(files.items()):
        parts = Path(rel).parts
        dest = scratch / rel
        if rel.startswith("/") or ".." in parts or not parts or parts[0] not in MADE_IN:
            raise ValueError(f"the hub sent a file outside the workspace and home: {rel!r}")
        dest.parent.mkdir(parents=True, exist_ok=True)
        if not dest.parent.resolve().is_relative_to(root) or dest.is_symlink():
            raise ValueError(f"the hub sent a file through a link: {rel!r}")
        dest.write_bytes(data)
        dest.chmod(mode)


class HubProxy(HarnessService):
    """Stands in, on a worker, for the hub's service number ``index``."""

    def __init__(self, call: HubCall, index: int, name: str, contracts: dict[str, list[WorldToolContract | None]]):
        self.call = call
        self.index = index
        self.name = name
        self.contracts = contracts

    def tool_contract(self, task: Any) -> WorldToolContract | None:
        found = self.contracts.get(task.id)
        return found[self.index] if found else None

    async def open(self, handle: AttemptHandle) -> ServiceSession | None:
        key = AttemptKey(handle.trial_id, handle.attempt, handle.task.id, handle.variant, handle.agent)
        opened: Opened | None = await self.call("open", key, self.index)
        if opened is None:
            return None
        if opened.wiring.gateway is not None:
            handle.redactor.add("gateway_key", opened.wiring.gateway.api_key)
        if opened.wiring.tools is not None:
            handle.redactor.add("tools_key", opened.wiring.tools.key)
        for name, value in opened.secrets.items():  # canaries the session planted, keys it handed out
            handle.redactor.add(name, value)
        _put_made_files(handle.scratch, opened.files)
        return _ProxySession(self, handle, key, opened)


class _ProxySession(ServiceSession):
    def __init__(self, proxy: HubProxy, handle: AttemptHandle, key: AttemptKey, opened: Opened):
        self.proxy = proxy
        self.handle = handle
        self.key = key
        self.endpoints = list(opened.endpoints)
        self.env = dict(opened.env)
        self._wiring = opened.wiring

    def wiring(self) -> Wiring:
        return self._wiring

    async def close(self) -> SessionReport:
        try:
            closed: Closed = await self.proxy.call("close", self.key, self.proxy.index)
        except Exception as e:  # noqa: BLE001 - close must not raise
            return SessionReport(extra={"close_error": f"{type(e).__name__}: {e}"})
        h = self.handle
        for ev in closed.events:  # the service's events, at the time they happened
            h.trace.emit(ev.source, ev.kind, ev.data, ts=ev.ts)
        for name in closed.hits:
            h.budget_meter.hit(name)
        trial_dir = h.attempt_dir.parent.parent
        for rel, data in closed.blobs.items():
            dest = trial_dir / rel
            if not dest.resolve().is_relative_to(trial_dir.resolve()):
                continue  # never outside the attempt's own staging folder
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        return SessionReport(usage=closed.usage, incidents=list(closed.incidents),
                             budget_exceeded=list(closed.budget_exceeded), verifier_extra=closed.verifier_extra,
                             files={name: trial_dir / rel for name, rel in closed.files.items()}, extra=dict(closed.extra))
