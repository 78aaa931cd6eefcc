"""A finished run's results, read from its run directory the first time they are asked for."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from assay.records.results import AttemptResult
from assay.store.rundir import RunDir


class ResultsOnDisk(Sequence[AttemptResult]):
    """Every attempt result of a run, read from its directory the first time they are asked for,
    then kept: what a finished run hands back (:class:`~assay.run.runner.RunOutcome`) and tells its
    plugins, at no cost when nobody reads them. The CLI does not: reading them all took 18 s and
    1.3 GB at 2x10^5 trials, at the end of every run."""

    def __init__(self, rd: RunDir) -> None:
        self._rd = rd
        self._read: list[AttemptResult] | None = None

    def _all(self) -> list[AttemptResult]:
        if self._read is None:
            self._read = self._rd.results()
        return self._read

    def __len__(self) -> int:
        return len(self._all())

    def __getitem__(self, i: Any) -> Any:
        return self._all()[i]

    def __iter__(self) -> Iterator[AttemptResult]:
        return iter(self._all())

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (ResultsOnDisk, list, tuple)):
            return self._all() == list(other)
        return NotImplemented

    def __repr__(self) -> str:
        return f"ResultsOnDisk({self._rd.path}, {'read' if self._read is not None else 'not read yet'})"


__all__ = ["ResultsOnDisk"]
