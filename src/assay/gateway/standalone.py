"""A gateway outside any run: for trying an agent by hand, for benchmarks and tests.

One keyed session, no trial: budgets are unlimited, faults are the record's, the trace (if a
path is given) is a plain trace file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from assay.errors import UsageError
from assay.gateway.backends.local import local_record
from assay.gateway.config import prices_setting, upstream_record
from assay.gateway.script import load_script
from assay.gateway.service import GatewayService, new_key
from assay.gateway.session import GatewaySession
from assay.records.manifest import GatewayRecord
from assay.spec.digest import sha256_file
from assay.trace.redact import Redactor
from assay.trace.writer import TraceWriter


def standalone_record(backend: str, *, script: Path | None = None, target: str | None = None) -> GatewayRecord:
    """A gateway record from ``--backend`` plus its one argument (script, recording, URL or model file)."""
    if backend == "scripted":
        if script is None:
            raise UsageError("--backend scripted needs --script FILE (fix: pass a model.yaml)")
        load_script(script)
        return GatewayRecord(backend="scripted", model="assay-scripted", settings={"script": str(script.resolve())},
                             prices=prices_setting({}))
    if backend == "replay":
        if target is None or not Path(target).is_file():
            raise UsageError("--backend replay needs --target RECORDING.jsonl (a gateway.session.jsonl)")
        return GatewayRecord(backend="replay", model="replay", settings={"source": str(Path(target).resolve()),
                                                                          "kind": "file", "sha256": sha256_file(Path(target))})
    if backend == "upstream":
        if not target:
            raise UsageError("--backend upstream needs --target BASE_URL[#model]")
        return upstream_record(target)
    if backend == "local":
        return local_record(target)
    raise UsageError(f"unknown backend {backend!r} (fix: scripted, replay, upstream or local)")


@dataclass
class Standalone:
    service: GatewayService
    session: GatewaySession

    @property
    def url(self) -> str:
        return self.service.server.url

    def stop(self) -> None:
        self.service.stop_sync()


def start_standalone(record: GatewayRecord, *, port: int = 0, key: str | None = None,
                     trace: Path | None = None) -> Standalone:
    svc = GatewayService(record)
    if port:
        from assay.gateway.server import ServerThread

        svc.server = ServerThread(svc.app, port=port)
    svc.start_sync()
    sess = svc.open_session(None, key=key or new_key())
    if trace is not None:
        sess.trace = TraceWriter(trace, "standalone", redactor=Redactor({"gateway_key": sess.key}))
        sess.redactor = sess.trace.redactor
        sess.recording = trace.with_suffix(".session.jsonl")
    return Standalone(svc, sess)
