"""Deterministic model faults: which call gets which fault, decided from the call number alone."""

from __future__ import annotations

from assay.spec.faults import FaultKind, FaultSpec

DEFAULT_TIMEOUT_HANG_S = 30.0
DEFAULT_LATENCY_S = 1.0
DEFAULT_RETRY_AFTER_S = 1.0
DEFAULT_STATUS = 503


class FaultPlan:
    """The faults of one attempt: the run's (manifest) then the task's, first match wins."""

    def __init__(self, faults: list[FaultSpec]):
        self.faults = list(faults)

    def for_call(self, call_no: int) -> FaultSpec | None:
        for f in self.faults:
            if f.on_call <= call_no < f.on_call + f.times:
                return f
        return None


def describe(f: FaultSpec, call_no: int) -> dict[str, object]:
    """The payload of a ``fault_injected`` event."""
    data: dict[str, object] = {"kind": f.kind.value, "call": call_no, "on_call": f.on_call, "times": f.times}
    if f.kind is FaultKind.rate_limit:
        data["retry_after_s"] = f.retry_after_s if f.retry_after_s is not None else DEFAULT_RETRY_AFTER_S
    elif f.kind is FaultKind.server_error:
        data["status"] = f.status or DEFAULT_STATUS
    elif f.kind is FaultKind.timeout:
        data["hang_s"] = f.delay_s if f.delay_s is not None else DEFAULT_TIMEOUT_HANG_S
    elif f.kind is FaultKind.latency:
        data["delay_s"] = f.delay_s if f.delay_s is not None else DEFAULT_LATENCY_S
    return data
