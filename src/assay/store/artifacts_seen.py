"""Whether the artifacts a scan's results name are in the run's artifact store, asked of the disk as
seldom as the answers allow.

One found is remembered for the rest of the scan: a run's repeats name the same artifacts, and on
a real run of 60,000 trials these stats were a tenth of the checking process's time. One not found
is asked again by each trial, once (the results' check and the trial's fold ask alike), so each
result that names it is named."""

from __future__ import annotations

import os

from assay.store.rundir import RunDir

#: artifacts a scan remembers it found (about 100 bytes each): more, and it forgets them all and asks again
REMEMBERED = 1 << 16


class ArtifactsSeen:
    """The answers of one scan: what was found, and what the trial being read asked."""

    def __init__(self, rd: RunDir) -> None:
        self.rd = rd
        self.there: set[str] = set()  # digests found on disk during the scan (at most REMEMBERED)
        self._trial: dict[str, bool] = {}  # digest -> exists, for the trial being read

    def next_trial(self) -> None:
        """Another trial is read: what was not found is asked again."""
        self._trial.clear()

    def exists(self, digest: str) -> bool:
        """:meth:`RunDir.artifact_path` exists (followed, as Path.exists follows)."""
        if digest in self.there:
            return True
        known = self._trial.get(digest)
        if known is None:
            known = self._trial[digest] = os.path.exists(self.rd.artifact_file(digest))
            if known:
                if len(self.there) >= REMEMBERED:
                    self.there.clear()
                self.there.add(digest)
        return known


__all__ = ["REMEMBERED", "ArtifactsSeen"]
