"""May this judge count? A judge whose calibration is missing, stale (its digest changed) or below
its thresholds never contributes to a strict pass: its scores are shown as *uncalibrated*."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import ValidationError

from assay.spec.judge import CalibrationRecord, JudgeSpec

State = Literal["calibrated", "missing", "stale", "below_threshold", "unreadable"]


@dataclass(frozen=True)
class CalibrationStatus:
    state: State
    reasons: list[str] = field(default_factory=list)

    @property
    def may_gate(self) -> bool:
        """Only a calibrated judge's verdict may count towards a strict pass."""
        return self.state == "calibrated"

    @property
    def label(self) -> str:
        return "calibrated" if self.may_gate else f"uncalibrated ({self.state})"


def read_record(path: Path) -> CalibrationRecord:
    return CalibrationRecord.model_validate(json.loads(path.read_text(encoding="utf-8")))


def calibration_status(spec: JudgeSpec, model: str, backend: str | None, record_path: Path | None) -> CalibrationStatus:
    """The gate of one judge for one model, from its calibration record file (if any)."""
    if record_path is None or not record_path.is_file():
        return CalibrationStatus("missing", [f"no calibration record{f' at {record_path}' if record_path else ''}"
                                             " (fix: assay judge calibrate)"])
    try:
        rec = read_record(record_path)
    except (OSError, ValueError, ValidationError) as e:
        return CalibrationStatus("unreadable", [f"{record_path}: {type(e).__name__}: {str(e)[:200]}"])
    want = spec.digest(model, backend)
    if rec.judge_digest != want:
        return CalibrationStatus("stale", [f"the judge changed since its calibration (digest {rec.judge_digest[:12]} "
                                           f"!= {want[:12]}: model, prompt, rubric or sampling)"])
    if spec.thresholds != rec.thresholds:
        return CalibrationStatus("stale", ["the judge's thresholds changed since its calibration (fix: recalibrate)"])
    if not rec.passed:
        return CalibrationStatus("below_threshold", list(rec.failures))
    return CalibrationStatus("calibrated")
