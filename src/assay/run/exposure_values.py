"""The expected values of a task, as strings an exposure probe's findings are searched for.

What a predicate compares against (a text, a value, a command, the literal parts of a pattern)
is the answer key; an agent that can read it can copy it. Taken from the predicates' own
documents, so a new predicate kind is covered by its fields. Values the agent is given anyway
(in its prompt or its workspace) and values too short to tell apart are left out.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any, Iterator

from assay.spec.load import LoadedTask

try:  # the regex parser of the standard library (public as sre_parse before 3.11)
    import re._parser as sre_parse  # type: ignore[import-not-found]
    from re import _constants as sre_c  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - older layouts
    import sre_parse  # type: ignore[no-redef]
    import sre_constants as sre_c  # type: ignore[no-redef]

#: the shortest value worth searching for (shorter ones occur everywhere by chance)
MIN_VALUE = 6
#: a hidden file this small is searched for as a whole text too
HIDDEN_TEXT_MAX = 4096
#: fields that name where to look or how to weigh, not what to find
NOT_VALUES = {"id", "kind", "description", "path", "paths", "exclude", "weight", "required", "file", "function",
              "tests", "judge", "calibration", "expected_file", "schema_file", "timeout_s", "note", "world", "table",
              "tool", "tools", "on", "severity", "category", "cwd", "type", "run", "$schema", "format"}
PATTERN_KEYS = {"regex", "re", "said", "pattern", "matches"}


def literals(pattern: str) -> list[str]:
    """The runs of literal characters a pattern requires, e.g. ``db_auth_failure`` of
    ``^root_cause:[ \\t]*db_auth_failure$``."""
    try:
        parsed = sre_parse.parse(pattern)
    except (re.error, RecursionError, OverflowError):
        return [pattern]
    runs: list[str] = []
    cur: list[str] = []

    def flush() -> None:
        if cur:
            runs.append("".join(cur))
            cur.clear()

    def walk(items: Any) -> None:
        for op, arg in items:
            if op is sre_c.LITERAL:
                cur.append(chr(arg))
            elif op is sre_c.SUBPATTERN:
                walk(arg[-1])
            else:
                flush()
    walk(parsed)
    flush()
    return runs


def _telling(value: str) -> bool:
    """Long enough, and not a plain short word (``object``, ``string``) that occurs anywhere."""
    return len(value) >= MIN_VALUE and not (value.isalpha() and value.islower() and len(value) < 10)


def _strings(doc: Any, key: str = "") -> Iterator[tuple[str, str]]:
    """(field, value) of every string leaf of a predicate document that is something to find."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k not in NOT_VALUES:
                yield from _strings(v, k)
    elif isinstance(doc, list):
        for v in doc:
            yield from _strings(v, key)
    elif isinstance(doc, str):
        if key in PATTERN_KEYS or key.endswith("_matches"):
            for lit in literals(doc):
                yield key, lit
        yield key, doc
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool) and key not in NOT_VALUES:
        yield key, str(doc)


def regular_files(root: Path) -> Iterator[Path]:
    """Every regular file under ``root`` (or ``root`` itself), links never followed."""
    if root.is_symlink():
        return
    if root.is_file():
        yield root
        return
    for dirpath, dirs, files in os.walk(root, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            p = Path(dirpath) / name
            if p.is_file() and not p.is_symlink():
                yield p


def _given_text(task: LoadedTask) -> str:
    """What the agent is told or handed anyway: its prompts and the workspace fixture's text."""
    parts = [task.prompt_for(v) for v in task.spec.variant_ids()]
    for p in regular_files(task.dir / task.spec.workspace):
        if p.stat().st_size <= 1 << 20:
            parts.append(p.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(parts)


def expected_values(task: LoadedTask) -> dict[str, str]:
    """Value -> where it comes from (``predicates.ID.FIELD``, ``hidden/FILE``)."""
    given = _given_text(task)
    conv = task.spec.conversation
    preds = [*task.spec.predicates, *(p for ps in (conv.turn_predicates().values() if conv else []) for p in ps)]
    out: dict[str, str] = {}
    for p in preds:
        for key, value in _strings(p.model_dump(mode="json")):
            value = value.strip()
            if _telling(value) and value not in given:
                out.setdefault(value, f"predicate {p.id!r} field {key!r}")
    hidden = task.dir / task.spec.hidden
    for p in regular_files(hidden):
        if p.stat().st_size <= HIDDEN_TEXT_MAX:
            text = p.read_bytes().decode("utf-8", errors="replace").strip()
            if _telling(text) and text not in given:
                out.setdefault(text, str(p.relative_to(task.dir)))
    return out

