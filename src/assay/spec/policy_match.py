"""Which approval policy a call falls under: first matching rule wins, globs on the tool name and
on the text of each named argument. In ``spec`` so a task can be checked against its own policy
when it loads (:mod:`assay.spec.world_checks`); :mod:`assay.approvals.policy` uses the same."""

from __future__ import annotations

import fnmatch
from typing import Any

from assay.spec.worlds import ApprovalsSpec, PolicyRule


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
