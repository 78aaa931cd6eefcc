"""Why an oracle failed, when it is this machine and not the task: a write outside the workspace
refused to the verifier. Harbor and Terminal-Bench run their tests as root in a writable
container; here the verifier is an unprivileged user over a read-only image (docs/environments.md),
so a test that starts a server under ``/server`` or edits ``/etc`` fails whatever the agent did.
``assay audit`` labels such a task ``needs`` (root), quoting the line, instead of blaming it."""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from assay.records.results import AttemptResult

#: a refusal and the path it names, quoted as coreutils (‘…’ or '…') or Python ('…') quote it
_REFUSAL = re.compile(r"(Permission denied|Read-only file system|Operation not permitted)")
_QUOTED = re.compile(r"[‘'\"](/[^’'\"\n]*)[’'\"]")
#: what says a refusal did not fail anything: pytest's cache beside read-only tests is a warning
_HARMLESS = ("PytestCacheWarning", "could not create cache path")
_MAX = 3


def refused_writes(result: AttemptResult | None, workdir: str | None) -> list[str]:
    """The lines of the failed predicates' output (the verifier's) that refuse a path outside
    ``workdir`` (the workspace as the verifier sees it), at most a few, each as written."""
    if result is None:
        return []
    seen: list[str] = []
    for p in result.predicates:
        if p.passed:
            continue
        for value in p.evidence.values():
            if not isinstance(value, str):
                continue
            for line in value.splitlines():
                if _REFUSAL.search(line) is None or any(h in line for h in _HARMLESS):
                    continue
                paths = [PurePosixPath(m) for m in _QUOTED.findall(line)]
                if any(not _inside(path, workdir) for path in paths) and line.strip() not in seen:
                    seen.append(line.strip()[:200])
                if len(seen) >= _MAX:
                    return seen
    return seen


def _inside(path: PurePosixPath, workdir: str | None) -> bool:
    return workdir is not None and path.is_relative_to(workdir)


def needs_root(lines: list[str]) -> str:
    """The ``needs`` line of the audit for those refusals."""
    return ("root: the verifier was refused a write outside the workspace (" + "; ".join(lines) + "); here it runs "
            "as an unprivileged user over a read-only image, where Harbor and Terminal-Bench run it as root")
