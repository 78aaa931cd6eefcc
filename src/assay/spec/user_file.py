"""Reading a file the user gave (faults, prices, variant rules, limits...): one reader, so every such
file's problem is one line naming the file, the line, the field and the fix, never PyYAML's
multi-line mark or a pydantic error per union member."""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import yaml
from pydantic import ValidationError

from assay.errors import SpecError, SpecProblem, UsageError
from assay.untrusted.yaml_doc import load_yaml


@dataclass(frozen=True)
class UserFile:
    """A user's YAML/JSON file as read: its path, its text (to find a field's line) and its data."""

    path: Path
    text: str
    data: Any
    via: str = ""  # how the user named it when not by its path (an environment variable), said in each problem

    def line_of(self, loc: Sequence[str | int]) -> int | None:
        """The 1-based line of the deepest field of ``loc`` found in the file (None if not found)."""
        return line_of(self.text, loc)

    def where(self, loc: Sequence[str | int]) -> str:
        """``line N, FIELD`` (or just the field) for a problem's location."""
        field = ".".join(str(x) for x in loc)
        line = self.line_of(loc) if loc else None
        return ", ".join(x for x in (f"line {line}" if line else "", field) if x)

    def problem(self, loc: Sequence[str | int], message: str, fix: str) -> SpecError:
        return SpecError([SpecProblem(str(self.path), self.where(loc), message + self._via(), fix)])

    def _via(self) -> str:
        return f" (file named by {self.via})" if self.via else ""

    def invalid(self, err: ValidationError, fix: str) -> SpecError:
        """Every problem pydantic found, one line each: repeats folded, and a typo'd key reported
        once ("unknown field 'inptu' (did you mean 'input'?)"), not also as the field it misses."""
        errors = err.errors()
        missing = {(tuple(e["loc"][:-1]), str(e["loc"][-1])) for e in errors if e["type"] == "missing" and e["loc"]}
        meant: dict[tuple, str] = {}
        for e in errors:
            if e["type"] == "extra_forbidden" and e["loc"]:
                parent = tuple(e["loc"][:-1])
                close = difflib.get_close_matches(str(e["loc"][-1]), [m for p, m in missing if p == parent], n=1)
                if close:
                    meant[tuple(e["loc"])] = close[0]
        typo_of = {(loc[:-1], m) for loc, m in meant.items()}
        problems: list[SpecProblem] = []
        seen: set[tuple[str, str]] = set()
        for e in errors:
            loc = tuple(e["loc"])
            if e["type"] == "missing" and loc and (loc[:-1], str(loc[-1])) in typo_of:
                continue
            msg = e["msg"]
            if e["type"] == "extra_forbidden":
                msg = f"unknown field {str(loc[-1])!r}" + (f" (did you mean {meant[loc]!r}?)" if loc in meant else "")
            key = (".".join(map(str, loc)), msg)
            if key in seen:
                continue
            seen.add(key)
            problems.append(SpecProblem(str(self.path), self.where(loc), msg + self._via(), fix))
        return SpecError(problems)


def read_user_yaml(path: Path, *, what: str, fix: str, via: str = "") -> UserFile:
    """Read a YAML (or JSON) file the user named; a missing, unreadable or malformed one is a
    :class:`SpecError` of one line: the file, the line and column, what is wrong, the fix."""
    p = Path(path)
    if not p.is_file():
        raise SpecError([SpecProblem(str(p), "", f"{what} not found" if not p.exists() else f"{what} is not a file",
                                     f"give the path of an existing YAML file ({fix})")])
    try:
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise SpecError([SpecProblem(str(p), "", f"not UTF-8 text (byte offset {e.start})", "save the file as UTF-8")]) from None
    except OSError as e:
        raise SpecError([SpecProblem(str(p), "", f"cannot be read: {e.strerror}", "make the file readable")]) from None
    try:
        data = load_yaml(text)
    except yaml.YAMLError as e:
        raise SpecError([yaml_problem(p, text, e)]) from None
    return UserFile(p, text, data, via)


def yaml_problem(path: Path, text: str, e: yaml.YAMLError) -> SpecProblem:
    """PyYAML's error as one problem: ``line L, column C`` and the text of that line."""
    mark = getattr(e, "problem_mark", None)
    where = ""
    if mark is not None:
        lines = text.splitlines()
        near = lines[mark.line].strip() if 0 <= mark.line < len(lines) else ""
        where = f"line {mark.line + 1}, column {mark.column + 1}" + (f" ({near[:60]!r})" if near else "")
    problem = getattr(e, "problem", None) or str(e).splitlines()[0]
    context = getattr(e, "context", None)
    message = f"not valid YAML: {problem}" + (f" ({context})" if context else "")
    return SpecProblem(str(path), where, " ".join(message.split()), "fix the YAML syntax")


def line_of(text: str, loc: Sequence[str | int]) -> int | None:
    """The line of the deepest node of ``loc`` in a YAML text (keys and list indexes)."""
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.YAMLError:
        return None
    line = None
    for key in loc:
        if isinstance(node, yaml.MappingNode):
            match = next(((k, v) for k, v in node.value if getattr(k, "value", None) == str(key)), None)
            if match is None:
                continue  # a name pydantic added (a union member, a validator): not in the file
            line, node = match[0].start_mark.line + 1, match[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(key, int) and 0 <= key < len(node.value):
            node = node.value[key]
            line = node.start_mark.line + 1
    return line


def check_output_path(option: str, path: Path | None) -> None:
    """An output the user named (``--out``, ``--junit``...) is checked before any work: it is not a
    folder, and its folder exists or can be made (the nearest existing one above it is a writable
    folder); else a usage error naming the path."""
    if path is None or str(path) == "-":
        return
    p = Path(path)
    fix = "name a file in a writable folder"
    if p.is_dir():
        raise UsageError(f"{option} {p}: is a directory (fix: {fix}, e.g. {p / 'out.jsonl'})")
    _creatable(option, p, p.absolute().parent, fix)
    if p.exists() and not os.access(p, os.W_OK):
        raise UsageError(f"{option} {p}: not writable (fix: {fix})")


def check_output_folder(option: str, path: Path) -> None:
    """A folder the user named for a command's output is checked before the work that fills it:
    it is a folder, or it can be made (the nearest existing one above it is a writable folder)."""
    p = Path(path)
    fix = "name a folder, new or existing, in a writable folder"
    if p.exists() and not p.is_dir():
        raise UsageError(f"{option} {p}: is not a folder (fix: {fix})")
    _creatable(option, p, p.absolute(), fix)


def _creatable(option: str, p: Path, folder: Path, fix: str) -> None:
    """``folder`` exists as a writable folder, or the nearest existing one above it is one (so it
    can be made); else a usage error naming ``p``."""
    base = folder
    while not base.exists() and base != base.parent:
        base = base.parent
    if not base.is_dir():
        raise UsageError(f"{option} {p}: {base} is not a directory (fix: {fix})")
    if not os.access(base, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {p}: not writable (fix: {fix})")


def write_output(option: str, path: Path, text: str) -> None:
    """Write a command's output file whole or not at all: checked, its folder made, written beside
    it and renamed over it; a write that fails anyway (``/proc``, a full disk) is a usage error."""
    check_output_path(option, path)
    p = Path(path)
    part = p.with_name(f".{p.name}.part")
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        part.write_text(text, encoding="utf-8")
        os.replace(part, p)
    except OSError as e:
        part.unlink(missing_ok=True)
        raise unwritable(option, p, e) from None


def unwritable(option: str, path: Path, e: OSError) -> UsageError:
    """A write the checks above could not foresee (``/proc``, a full quota) as one line."""
    return UsageError(f"{option} {path}: cannot be written ({e.strerror or e}) (fix: name a file in an existing, "
                      "writable folder)")
