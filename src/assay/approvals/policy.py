"""Matching calls against policy and approver rules: first matching rule wins, globs on the
tool name and on the text of each named argument (the matching itself is
:mod:`assay.spec.policy_match`, which the task's load-time checks share)."""

from __future__ import annotations

from typing import Any

from assay.spec.policy_match import decide_policy, matches
from assay.spec.worlds import ApprovalsSpec, ApproverRule

__all__ = ["approver_rule", "decide_policy", "matches"]


def approver_rule(spec: ApprovalsSpec, tool: str, args: dict[str, Any]) -> ApproverRule:
    """How the scripted approver answers this request (its default when no rule matches)."""
    for rule in spec.approver.rules:
        if matches(rule.tool, rule.args, tool, args):
            return rule
    return ApproverRule(decision=spec.approver.default)
