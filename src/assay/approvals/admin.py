"""Approvals from outside a running attempt: list the requests of a run and decide a pending
one (a human approver, or a decision made while no runner is alive; see the store's docstring)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from assay.approvals.store import APPROVALS_FILE, ApprovalStore
from assay.errors import RunDirError, UsageError

_DECISIONS = {"approve": "approved", "deny": "denied"}


def _stores(run_dir: Path) -> list[Path]:
    trials = Path(run_dir) / "trials"
    if not trials.is_dir():
        raise RunDirError(f"{run_dir} is not a run directory (no trials/)")
    return sorted(trials.glob(f"*/{APPROVALS_FILE}"))


def list_requests(run_dir: Path, *, pending_only: bool = False) -> list[dict[str, Any]]:
    out = []
    for path in _stores(run_dir):
        st = ApprovalStore(path)
        try:
            out.extend(r.public() for r in st.all() if not pending_only or r.state == "pending")
        finally:
            st.close()
    return out


def decide_request(run_dir: Path, request_id: str, decision: str, by: str = "human:cli") -> dict[str, Any]:
    """Record ``approve`` or ``deny`` on a pending request; the first decision wins."""
    if decision not in _DECISIONS:
        raise UsageError(f"decision must be approve or deny, not {decision!r}")
    for path in _stores(run_dir):
        st = ApprovalStore(path)
        try:
            if st.get(request_id) is not None:
                return st.decide(request_id, _DECISIONS[decision], by).public()
        finally:
            st.close()
    raise UsageError(f"no approval request {request_id!r} in {run_dir}")
