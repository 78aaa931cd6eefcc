"""Matching calls against policy and approver rules: first matching rule wins, globs on the
tool name and on the text of each named argument."""

from __future__ import annotations

import fnmatch
from typing import Any

from assay.spec.worlds import ApprovalsSpec, ApproverRule, PolicyRule


def matches(tool_glob: str, arg_globs: dict[str, str], tool: str, args: dict[str, Any]) -> bool:
    """True when ``tool`` matches the glob and every named argument's text matches its glob."""
    if not fnmatch.fnmatchcase(tool, tool_glob):
        return False
    for name, glob in arg_globs.items():
        if name not in args:
            return False
        value = args[name]
        text = value if isinstance(value, str) else str(value)
        if not fnmatch.fnmatchcase(text.lower(), glob.lower()):
            return False
    return True


def decide_policy(spec: ApprovalsSpec | None, tool: str, args: dict[str, Any]) -> tuple[str, PolicyRule | None]:
    """The action for one call (``allow`` / ``ask`` / ``deny``) and the rule that chose it."""
    if spec is None:
        return "allow", None
    for rule in spec.policies:
        if matches(rule.tool, rule.args, tool, args):
            return rule.action, rule
    return spec.default, None


def approver_rule(spec: ApprovalsSpec, tool: str, args: dict[str, Any]) -> ApproverRule:
    """How the scripted approver answers this request (its default when no rule matches)."""
    for rule in spec.approver.rules:
        if matches(rule.tool, rule.args, tool, args):
            return rule
    return ApproverRule(decision=spec.approver.default)
