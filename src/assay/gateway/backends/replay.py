"""The replay backend: answers from a session the gateway recorded, and only from it.

A request must match the recorded one it replaces (same tools offered, same earlier assistant
turns); one that diverges gets a clear error answer and an ``error`` event, never a silent
answer from somewhere else in the recording.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from assay.gateway.backends.base import BackendSession, ModelBackend
from assay.gateway.errors import WireError
from assay.gateway.neutral import ModelReply, ModelRequest
from assay.gateway.recording import read_recording
from assay.gateway.session import RECORDING_NAME, fingerprint
from assay.harness.services import AttemptHandle
from assay.records.manifest import GatewayRecord
from assay.records.trial_id import parse_trial_id
from assay.spec.load import LoadedSuite
from assay.untrusted.numeral import decimal


def _key(fp: Any) -> str:
    return json.dumps(fp, sort_keys=True, ensure_ascii=False)


def _attempt_recording(trial_dir: Path) -> Path | None:
    numbered = [(n, p) for p in (trial_dir / "attempts").glob("*") if (n := decimal(p.name)) is not None]
    for _n, a in sorted(numbered, key=lambda x: -x[0]):
        if (a / RECORDING_NAME).is_file():
            return a / RECORDING_NAME
    return None


def find_recording(run_dir: Path, trial_id: str) -> Path | None:
    """The recording of the same trial, else of the same task/variant/repetition by any agent, else of the task."""
    exact = _attempt_recording(run_dir / "trials" / trial_id)
    if exact is not None:
        return exact
    task, variant, _agent, rep = parse_trial_id(trial_id)
    trials = [(parsed, d) for d in sorted((run_dir / "trials").glob("*")) if (parsed := _trial_of(d.name))]
    for match in (lambda t, v, r: (t, v, r) == (task, variant, rep), lambda t, v, r: t == task):
        for (t, v, _a, r), d in trials:
            if match(t, v, r):
                found = _attempt_recording(d)
                if found is not None:
                    return found
    return None


def _trial_of(name: str) -> tuple[str, str, str, int] | None:
    """The parts of a folder name that is a trial id (None: some other folder)."""
    try:
        return parse_trial_id(name)
    except ValueError:
        return None


def _difference(expected: dict[str, Any], got: dict[str, Any]) -> str:
    if expected.get("tools") != got.get("tools"):
        return f"the recording offered tools {expected.get('tools')}, this request offers {got.get('tools')}"
    exp, have = expected.get("assistant_turns", []), got.get("assistant_turns", [])
    for i, (a, b) in enumerate(zip(exp, have)):
        if _key(a) != _key(b):
            return f"assistant turn {i + 1} was {json.dumps(a)[:300]} in the recording but {json.dumps(b)[:300]} here"
    return f"the recording expects {len(exp)} earlier assistant turn(s), this request has {len(have)}"


class ReplaySession(BackendSession):
    def __init__(self, entries: list[dict[str, Any]] | None, source: str, problem: str | None = None):
        self.entries = entries or []
        self.source = source
        self.problem = problem
        self.served = 0

    async def complete(self, req: ModelRequest, call_no: int) -> ModelReply:
        if self.problem is not None:
            raise WireError(400, "replay_missing", self.problem)
        want = _key(fingerprint(req))
        idx = None
        if self.served < len(self.entries) and _key(self.entries[self.served].get("request")) == want:
            idx = self.served
        else:
            idx = next((i for i, e in enumerate(self.entries) if _key(e.get("request")) == want), None)
        if idx is None:
            if self.served >= len(self.entries):
                why = f"the recording has only {len(self.entries)} answered call(s), all replayed"
            else:
                why = _difference(self.entries[self.served].get("request") or {}, json.loads(want))
            raise WireError(400, "replay_divergence",
                            f"request {call_no} diverges from the recorded session {self.source}: {why}")
        self.served = idx + 1
        reply = ModelReply.from_dict(self.entries[idx]["reply"])
        return ModelReply(**{**reply.__dict__, "extra": {"replayed_call": self.entries[idx].get("call"),
                                                         "source": self.source}})


class ReplayBackend(ModelBackend):
    name = "replay"

    @classmethod
    def record_from_cli(cls, value: str, suite: LoadedSuite) -> GatewayRecord:
        from assay.gateway.config import cli_argument, replay_record

        return replay_record(cli_argument(value))

    def open(self, handle: AttemptHandle | None) -> BackendSession:
        src = Path(self.record.settings.get("source", ""))
        if self.record.settings.get("kind") == "file":
            path: Path | None = src
        elif handle is None:
            return ReplaySession(None, str(src), "a run-directory replay needs a trial; pass a recording file")
        else:
            path = find_recording(src, handle.trial_id)
        if path is None or not path.is_file():
            trial = handle.trial_id if handle else "?"
            return ReplaySession(None, str(src), f"no recorded gateway session for trial {trial} in {src}")
        return ReplaySession(read_recording(path), str(path))


