"""A task's worlds against what else it declares, checked when it loads: every predicate names a
world the task declares, and every approval-gated webshop action has a policy that asks a person
before ``webshop.request_approval`` grants it. Each problem names the file, the field and the fix.

Both are the author's error, never the agent's: a predicate over an absent world fails every
agent alike, and a gate whose approval is granted without asking compares nothing.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from assay.spec.policy_match import decide_policy
from assay.errors import SpecProblem
from assay.spec.predicates import PredicateSpec
from assay.spec.task import TaskSpec
from assay.spec.webshop import OWN_BROWSER

APPROVAL_TOOL = "webshop.request_approval"
#: a target no policy glob written for real ids is likely to name: the policy's fallback for new rows
_ANY_TARGET = "\x00any-other-target"


def world_names(spec: TaskSpec) -> set[str]:
    """The worlds an attempt of this task opens (the user channel when behaviour is judged)."""
    names = set(spec.worlds.declared()) if spec.worlds is not None else set()
    return names | ({"user"} if spec.behaviour is not None else set())


def _predicates(spec: TaskSpec) -> Iterator[tuple[str, PredicateSpec]]:
    for i, p in enumerate(spec.predicates):
        yield f"predicates.{i}", p
    if spec.conversation is not None:
        for n, t in enumerate(spec.conversation.turns):
            for i, p in enumerate(t.predicates):
                yield f"conversation.turns.{n}.predicates.{i}", p


def _named_worlds(p: PredicateSpec) -> Iterator[tuple[str, str]]:
    """(field, world) for every world a predicate names (``*`` means every declared one)."""
    w = getattr(p, "world", None)
    if isinstance(w, str):
        yield "world", w
    for j, name in enumerate(getattr(p, "worlds", None) or []):
        if isinstance(name, str) and name != "*":
            yield f"worlds.{j}", name
    goal = getattr(p, "injected_goal", None)
    if goal is not None and isinstance(getattr(goal, "world", None), str):
        yield "injected_goal.world", goal.world


def check_predicate_worlds(spec: TaskSpec, file: Path, problems: list[SpecProblem]) -> None:
    """A predicate over a world the task does not declare would fail every agent: refuse it."""
    names = world_names(spec)
    have = ", ".join(sorted(names)) or "none"
    for loc, p in _predicates(spec):
        for attr, w in _named_worlds(p):
            if w not in names:
                problems.append(SpecProblem(str(file), f"{loc}.{attr}", f"predicate {p.id!r}: world {w!r} is not "
                                            f"declared in this task (declared: {have})",
                                            f"declare it under 'worlds: {w}:' or name a declared world"))


def check_approval_gates(spec: TaskSpec, file: Path, problems: list[SpecProblem]) -> None:
    """Every gated webshop action must reach a person: a policy that lets its approval request
    through without asking would grant it at once (the gate compares nothing)."""
    shop = spec.worlds.webshop if spec.worlds is not None else None
    if shop is None or not shop.approval_required:
        return
    if spec.approvals is None:
        if "approval_required" in shop.model_fields_set:  # the default with no approver fails closed at run time
            problems.append(SpecProblem(str(file), "worlds.webshop.approval_required",
                                        f"{', '.join(shop.approval_required)} need approval, but no `approvals:` policy "
                                        f"asks for {APPROVAL_TOOL}",
                                        f"add approvals: {{policies: [{{tool: {APPROVAL_TOOL}, action: ask}}], approver: "
                                        "...}, or set approval_required: []"))
        return
    targets = sorted({c.id for c in shop.customers} | {o.id for o in shop.orders} | {_ANY_TARGET})
    for action in shop.approval_required:
        loose = [t for t in targets if decide_policy(spec.approvals, APPROVAL_TOOL,
                                                     {"action": action, "target": t})[0] == "allow"]
        if loose:
            ids = [t for t in loose if t != _ANY_TARGET]
            which = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
            which = which + (" and any other target" if which else "any other target") if _ANY_TARGET in loose else which
            problems.append(SpecProblem(str(file), "approvals.policies",
                                        f"{APPROVAL_TOOL} of {action} is allowed without asking (for {which}), so the "
                                        "gate would grant it at once",
                                        f"add a first policy {{tool: {APPROVAL_TOOL}, action: ask}} (or deny), or drop "
                                        f"{action} from worlds.webshop.approval_required"))


def check_own_browser(spec: TaskSpec, file: Path, problems: list[SpecProblem]) -> None:
    """A product's own browser needs an app to browse: the sandbox has no network but the harness's
    endpoints, and only a web-app world is served to a browser (``webshop``)."""
    if OWN_BROWSER in spec.tools and (spec.worlds is None or "webshop" not in spec.worlds.declared()):
        problems.append(SpecProblem(str(file), "tools", f"`{OWN_BROWSER}` (the product's own browser) is allowed but "
                                    "no web-app world is declared, so there is nothing it could reach",
                                    "declare 'worlds: webshop:' (served to the browser at $ASSAY_WEBSHOP_URL), or drop "
                                    f"`{OWN_BROWSER}` from tools"))


def check_worlds(spec: TaskSpec, file: Path, problems: list[SpecProblem]) -> None:
    check_predicate_worlds(spec, file, problems)
    check_approval_gates(spec, file, problems)
    check_own_browser(spec, file, problems)
