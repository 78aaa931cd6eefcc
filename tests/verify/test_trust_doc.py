"""docs/security.md's trust table names every built-in predicate kind with the trust level its
evaluator declares (a kind added without a row, or a row whose level drifted, fails here)."""

from __future__ import annotations

import re

from assay.verify.registry import EVALUATORS, trust_of
from tests.conftest import ROOT


def _documented() -> dict[str, str]:
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split("## Who recorded the evidence", 1)[1].split("\n## ", 1)[0]
    out: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 2 or not cells[0].startswith("`"):
            continue
        trust = re.match(r"`(\w+)`", cells[1])
        for kind in re.findall(r"`(\w+)`", cells[0]):
            out[kind] = trust.group(1) if trust else ""
    return out


def test_every_builtin_predicate_kind_has_its_trust_level_in_the_threat_model() -> None:
    documented = _documented()
    kinds = EVALUATORS.builtin_names()
    assert {"file_exists", "reward_file", "http_request", "judge"} <= set(kinds), kinds
    missing = sorted(k for k in kinds if k not in documented)
    assert not missing, f"docs/security.md's trust table has no row for {missing}"
    wrong = {k: (documented[k], trust_of(k).value) for k in kinds if documented[k] != trust_of(k).value}
    assert not wrong, f"documented trust differs from the evaluator's (doc, code): {wrong}"
