"""The stages of a multi-stage Dockerfile: each ``FROM`` starts one, named by ``AS NAME`` and by
its index; a later stage may start ``FROM`` an earlier one and ``COPY --from=`` it. The last
stage is the image; the earlier ones are built only where it needs them (``environments/plan.py``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from assay.spec.dockerfile_parts import LineError
from assay.untrusted.numeral import decimal

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")


@dataclass(frozen=True)
class Stage:
    """An earlier stage: its name, the image its chain starts from (``from_image``, with
    ``from_stage`` the earlier stage it is ``FROM``, if any), its own steps and its FROM line."""

    name: str
    from_image: str
    from_line: int
    steps: tuple[Any, ...] = ()
    platform: str = ""
    from_stage: int | None = None


def stage_name(words: list[str], line_args: str, names: dict[str, int]) -> str:
    """``NAME`` of ``FROM IMAGE AS NAME`` ("" when unnamed); a name used twice is refused."""
    if len(words) == 1:
        return ""
    if len(words) != 3 or words[1].upper() != "AS":
        raise LineError(f"FROM {line_args!r} is not FROM [--platform=P] IMAGE [AS NAME]", "write FROM IMAGE [AS NAME]")
    name = words[2].lower()
    if not _NAME.match(name):
        raise LineError(f"stage name {words[2]!r} is not a name", "name it with letters, digits, '_', '-', '.'")
    if name in names:
        raise LineError(f"stage {name!r} is named twice", "give each stage its own name")
    return name


def stage_ref(value: str, names: dict[str, int], count: int) -> int:
    """The earlier stage ``COPY --from=VALUE`` names (its index); another image is refused."""
    if value.lower() in names:
        return names[value.lower()]
    if (index := decimal(value)) is not None:
        if index < count:
            return index
        raise LineError(f"COPY --from={value}: there are only {count} earlier stage(s)", "name an earlier stage")
    if any(c in value for c in ":/@."):
        raise LineError(f"COPY --from={value}: copying from another image (not a stage of this Dockerfile) is not "
                         "honoured here: that image cannot be fetched", "build what it holds in a stage of your own")
    raise LineError(f"COPY --from={value} names no earlier stage", "name a stage declared before it (FROM ... AS NAME)")


def stage_path(src: str) -> str:
    """A ``COPY --from`` source as an absolute path inside the stage (relative ones start at its
    root); ``..`` is refused, so no source can name anything above it."""
    if ".." in PurePosixPath(src).parts:
        raise LineError(f"COPY --from source {src!r} has '..'", "name the path from the stage's root")
    return src if src.startswith("/") else "/" + src
