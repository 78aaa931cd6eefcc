"""The LLM judge as a calibration discipline: agreement with humans first, then (maybe) scores.

A judge scores only what has no single right answer, only once its calibration against a
human-labelled set (kept apart from the test set) reaches the thresholds its definition
declares, and never over a failed deterministic predicate.

The names below are read from their modules on first use: every run imports
:mod:`assay.judge.uses`, and this package's import alone must not bring the judge's HTTP client.
"""

from __future__ import annotations

from typing import Any

_FROM = {"calibrate": "calibrate", "calibrate_files": "calibrate", "load_calibration_set": "calibrate",
         "load_judge": "calibrate", "measure": "calibrate", "CalibrationStatus": "gate", "calibration_status": "gate"}
__all__ = ["CalibrationStatus", "calibrate", "calibrate_files", "calibration_status", "load_calibration_set",
           "load_judge", "measure"]


def __getattr__(name: str) -> Any:
    if name in _FROM:
        import importlib

        return getattr(importlib.import_module(f"assay.judge.{_FROM[name]}"), name)
    raise AttributeError(f"module 'assay.judge' has no attribute {name!r}")
