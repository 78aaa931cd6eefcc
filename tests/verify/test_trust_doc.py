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


def _rows(heading: str) -> set[str]:
    text = (ROOT / "docs" / "security.md").read_text()
    section = text.split(heading, 1)[1].split("\n## ", 1)[0]
    return {m.group(1) for line in section.splitlines() if (m := re.match(r"\|\s*`(\w+)`", line))}


def test_every_lint_and_screen_rule_is_in_the_threat_model() -> None:
    import inspect

    from assay.score import screen
    from assay.verify.lint import RULES

    assert set(RULES) <= _rows("## Lint rules"), sorted(set(RULES) - _rows("## Lint rules"))
    flagged = set(re.findall(r'Flag\("(\w+)"', inspect.getsource(screen)))
    assert {"program_wrapper", "hidden_value_copied", "verifier_location"} <= flagged, flagged
    assert flagged <= _rows("## Screen rules"), sorted(flagged - _rows("## Screen rules"))
