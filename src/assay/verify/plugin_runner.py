"""Runs one Python plugin predicate in its own process (inside the verifier sandbox)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from typing import Any

RESULT_MARK = "@@ASSAY_PLUGIN_RESULT@@"


class PredicateContext:
    """What a plugin predicate function receives."""

    def __init__(self, payload: dict[str, Any]):
        self.work = Path(payload["work"])
        self.hidden = Path(payload["hidden"])
        self.code = Path(payload["code"])
        self.args: dict[str, Any] = payload.get("args") or {}
        self.initial_digests: dict[str, str] = payload.get("initial_digests") or {}
        self.final_digests: dict[str, str] = payload.get("final_digests") or {}
        self.extra: dict[str, Any] = payload.get("extra") or {}
        self._events = Path(payload["events"])

    def path(self, rel: str) -> Path:
        """A workspace path, refusing any that resolves outside the snapshot."""
        try:
            p = (self.work / rel).resolve()
        except RuntimeError:  # a loop of links the agent made: nothing there to read
            raise PermissionError(f"{rel!r} is a loop of symbolic links") from None
        if p != self.work.resolve() and not p.is_relative_to(self.work.resolve()):
            raise PermissionError(f"{rel!r} points outside the workspace snapshot")
        return p

    def read_text(self, rel: str) -> str:
        return self.path(rel).read_text()

    def events(self) -> list[dict[str, Any]]:
        if not self._events.exists():
            return []
        return [json.loads(line) for line in self._events.read_text().splitlines() if line.strip()]


def main(argv: list[str]) -> int:
    file, function, ctx_path = argv
    nonce = sys.stdin.readline().strip()  # read before any task code runs; never on disk or in argv
    payload = json.loads(Path(ctx_path).read_text())
    spec = importlib.util.spec_from_file_location("assay_plugin_predicate", file)
    if spec is None or spec.loader is None:
        print(f"cannot load {file}", file=sys.stderr)
        return 2
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = getattr(module, function)(PredicateContext(payload))
    if isinstance(result, tuple):
        passed, evidence = result
    else:
        passed, evidence = result, {}
    if not isinstance(passed, bool):
        print(f"{function} returned {type(passed).__name__}, expected bool or (bool, dict)", file=sys.stderr)
        return 2
    print(f"{RESULT_MARK}{nonce}:" + json.dumps({"passed": passed, "evidence": evidence}, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
