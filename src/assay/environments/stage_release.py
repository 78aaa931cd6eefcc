"""One Dockerfile's stages on one Debian release, and the packages that release dropped.

Every stage an image needs is built on the newest release among theirs (a binary one stage
builds for another is linked to its C library), and a stage built on a newer release than its
``FROM`` names installs the transitional packages that release dropped as what they stood for.
Both are said in the image's deviations.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, TypeVar

from assay.environments import releases


class _Plan(Protocol):
    """What is read of an image plan (``environments.plan.ImagePlan``, which imports this module)."""

    @property
    def ops(self) -> tuple[Any, ...]: ...
    @property
    def base(self) -> Any: ...
    @property
    def inputs(self) -> dict[str, object]: ...
    @property
    def deviations(self) -> tuple[str, ...]: ...


ImagePlan = TypeVar("ImagePlan", bound=_Plan)


def with_successors(plan: ImagePlan) -> ImagePlan:
    """``plan`` and its stages with the packages their built-on release dropped (a transitional
    package of the release their FROM names) installed as what each stood for, said per step."""
    table = releases.successors(releases.tag_release(str(plan.inputs.get("from", ""))), plan.base.release)
    ops, said = [], list(plan.deviations)
    for o in plan.ops:
        if o.stage is not None:
            o = dataclasses.replace(o, stage=with_successors(o.stage))
        elif o.kind == "run" and table:
            argv, found = releases.renamed(o.argv, table)
            if found:
                o = dataclasses.replace(o, argv=argv)
                said += [f"{o.where}: {old} installed as {table[old]} (Debian {plan.base.release} has no "
                         f"{old}, {TRANSITIONAL} {plan.inputs.get('from')} names)" for old in found]
        ops.append(o)
    return dataclasses.replace(plan, ops=tuple(ops), deviations=tuple(said))


#: how a stage moved to the release of the image's other stages is said, and a dropped package
#: replaced (the importer's report finds both so: :data:`SAID`)
ONE_RELEASE = "with the image's other stages"
TRANSITIONAL = "a transitional package of the release"
SAID = (ONE_RELEASE, TRANSITIONAL)


def releases_of(plan: ImagePlan) -> list[str]:
    """The release of ``plan`` and of every stage it copies from."""
    return [plan.base.release, *(r for o in plan.ops if o.stage is not None for r in releases_of(o.stage))]


def one_release(plan: ImagePlan, release: str) -> tuple[ImagePlan, list[str]]:
    """``plan`` and its stages all on ``release`` (a binary one stage builds for another is linked
    to its C library), and what was moved, said."""
    moved: list[str] = []
    ops = []
    for o in plan.ops:
        if o.stage is not None:
            sub, said = one_release(o.stage, release)
            moved += said
            o = dataclasses.replace(o, stage=sub)
        ops.append(o)
    deviations = plan.deviations
    if plan.base.release != release:
        said = (f"FROM {plan.inputs.get('from')} built on debian:{release} {ONE_RELEASE} "
                "(what one stage copies from another needs one C library)")
        moved.append(said)
        deviations = (*deviations, said)
    return dataclasses.replace(plan, base=dataclasses.replace(plan.base, release=release), ops=tuple(ops),
                               deviations=deviations), moved
