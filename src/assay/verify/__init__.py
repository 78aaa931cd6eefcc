"""Verify: predicates over the final state, run after the agent is gone."""

from assay.verify.context import Outcome, PathEscape, VerifyContext
from assay.verify.registry import evaluator, get_evaluator
from assay.verify.verifier import VerifierReport, diagnostic_score, run_verifier

__all__ = ["Outcome", "PathEscape", "VerifyContext", "VerifierReport", "diagnostic_score", "evaluator",
           "get_evaluator", "run_verifier"]
