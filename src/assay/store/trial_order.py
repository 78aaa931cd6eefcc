"""The order every reader of a run walks its trials in: the plan's, then trial folders the plan
does not name (sorted), without a set of 10^6 ids: the plan is sorted once as references and
the sorted listing of ``trials/`` is merged against it."""

from __future__ import annotations

from typing import Iterator, Sequence


def unplanned(planned: Sequence[str], on_disk: Sequence[str]) -> Iterator[str]:
    """The names of ``on_disk`` (sorted) that ``planned`` does not hold, in ``on_disk``'s order."""
    plan = sorted(planned)
    i, n = 0, len(plan)
    for name in on_disk:
        while i < n and plan[i] < name:
            i += 1
        if i < n and plan[i] == name:
            continue
        yield name


def has_repeats(planned: Sequence[str]) -> bool:
    """Whether an id is planned twice (a hand-edited manifest): readers that name each trial once
    then fall back to the plan without repeats."""
    plan = sorted(planned)
    return any(a == b for a, b in zip(plan, plan[1:]))


def share_names(on_disk: list[str], planned: Sequence[str]) -> None:
    """Replace, in the sorted listing ``on_disk``, each name the plan holds by the plan's own string
    object: 10^6 folder names then cost a reference each instead of a second copy of every id."""
    plan = sorted(planned)
    i, n = 0, len(plan)
    for k, name in enumerate(on_disk):
        while i < n and plan[i] < name:
            i += 1
        if i < n and plan[i] == name:
            on_disk[k] = plan[i]
