"""Security incidents: one frozen model for every producer (sandbox, worlds, verifier).

Incidents feed the security gate and are never averaged into a score. The JSON shape
(``type``, ``severity``, ``summary``, ``evidence``) is the one result files always had.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["low", "medium", "high", "critical"]


class Incident(BaseModel):
    """One security incident with the evidence that shows it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: str = Field(description="e.g. left_behind_process, secret_leak, read_only_write, approval_bypass")
    severity: Severity = Field("high", description="low | medium | high | critical")
    summary: str = ""
    evidence: dict[str, Any] = Field(default_factory=dict)


def incident(kind: str, severity: Severity, summary: str, **evidence: Any) -> Incident:
    """An incident of ``kind`` with keyword evidence (the one constructor every producer uses)."""
    return Incident(type=kind, severity=severity, summary=summary, evidence=evidence)


__all__ = ["Incident", "Severity", "incident"]
