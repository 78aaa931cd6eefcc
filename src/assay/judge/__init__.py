"""The LLM judge as a calibration discipline: agreement with humans first, then (maybe) scores.

A judge scores only what has no single right answer, only once its calibration against a
human-labelled set (kept apart from the test set) reaches the thresholds its definition
declares, and never over a failed deterministic predicate.
"""

from assay.judge.calibrate import calibrate, calibrate_files, load_calibration_set, load_judge, measure
from assay.judge.gate import CalibrationStatus, calibration_status

__all__ = ["CalibrationStatus", "calibrate", "calibrate_files", "calibration_status", "load_calibration_set",
           "load_judge", "measure"]
