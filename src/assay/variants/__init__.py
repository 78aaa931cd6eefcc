"""Counterfactual variants: derive tasks by declared rules, and report how sensitive an agent is
to them (docs/variants.md)."""

from assay.variants.generate import VariantSet, generate, read_set
from assay.variants.rules import RuleSet, VariantRule, load_rules
from assay.variants.sensitivity import SensitivityReport, render_markdown, sensitivity

__all__ = ["RuleSet", "SensitivityReport", "VariantRule", "VariantSet", "generate", "load_rules", "read_set",
           "render_markdown", "sensitivity"]
