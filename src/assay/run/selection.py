"""Which of a suite's tasks a run plans: ``--task`` keeps, ``--exclude`` leaves out.

An exclusion is how a large imported suite runs without the tasks this machine cannot build: it
is recorded in the plan (``plan.excluded``) and said beside the scores, so a score over part of a
suite is never read as the whole. A pattern that matches nothing, or an exclusion that leaves
nothing, is refused before anything is built or written: a typo never runs everything silently.
"""

from __future__ import annotations

from fnmatch import fnmatchcase

from assay.errors import UsageError
from assay.spec.load import LoadedSuite


def select_tasks(suite: LoadedSuite, only: list[str] | None,
                 exclude: list[str] | None) -> tuple[list[str] | None, list[str]]:
    """(the task filter a run plans, None for every task; the ids ``exclude`` left out, in the
    suite's order). ``exclude`` holds ids or shell patterns (``fnmatch``: ``*``, ``?``, ``[...]``)."""
    if not exclude:
        return only, []
    ids = [t.id for t in suite.tasks]
    for pattern in exclude:
        if not any(fnmatchcase(i, pattern) for i in ids):
            raise UsageError(f"--exclude {pattern} matches no task of the suite {suite.root} (fix: an id or a "
                             f"shell pattern of its tasks: {ids[:8]}{' ...' if len(ids) > 8 else ''})")
    out = [i for i in ids if any(fnmatchcase(i, p) for p in exclude)]
    kept = [i for i in ids if i not in out and (not only or i in only)]
    if not kept and not any(i not in ids for i in only or []):
        raise UsageError(f"--exclude {','.join(exclude)} leaves nothing left to run of "
                         f"{'the tasks --task chose' if only else 'the suite'} (fix: exclude fewer tasks)")
    unknown = [i for i in only or [] if i not in ids]  # kept, so the run's own check names them
    return kept + unknown, out
