"""Generating a variant set: every variant bound to its rule and digest, expected behaviour per
rule, no-op rules refused per task, bad input writes nothing, and the committed bookkeeping set
is exactly what the rules generate today."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.cli.main import main
from assay.errors import SpecError, UsageError
from assay.spec.digest import tree_digest, tree_digests
from assay.spec.load import load_suite
from assay.variants import generate, load_rules, read_set

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
BOOK = EXAMPLES / "bookkeeping"
RULES = BOOK / "variant-rules.yaml"
TASKS = [BOOK / "tasks" / t for t in ("clear-dinner", "opaque-merchant", "friction-power-bank")]


def test_set_binds_rule_digest_and_expectation(tmp_path):
    vset = generate(TASKS, load_rules(RULES), tmp_path / "set")
    suite = load_suite(tmp_path / "set")
    by_id = {t.id: t for t in suite.tasks}
    assert set(vset.bases) == {"clear-dinner", "opaque-merchant", "friction-power-bank"}
    for v in vset.variants:
        task = by_id[v.task_id]
        assert v.digest == task.digest == tree_digest(tree_digests(task.dir))
        assert task.spec.extra == {"variant_of": v.base_task, "rule": v.rule, "rule_digest": v.rule_digest}
        assert task.prompt != by_id[v.base_task].prompt
        assert not task.spec.variants
    nohint = by_id["clear-dinner--opaque-no-hint"]
    assert nohint.spec.behaviour.expect == "clarify" and nohint.spec.behaviour.reason_code == "ambiguous_merchant"
    assert nohint.spec.category == "restraint"
    assert {p.kind for p in nohint.spec.predicates} == {"behaviour", "world_unchanged", "tool_called"}
    assert "Xinghe Trading" in nohint.prompt and "dinner" not in nohint.prompt
    # a swap moves the expected values with it: the verifier expects the new merchant
    swapped = by_id["clear-dinner--opaque-merchant"]
    assert swapped.spec.behaviour.calls[0].args["merchant"] == "Xinghe Trading"
    assert "Xinghe Trading" in (swapped.dir / "solution" / "solve.sh").read_text()
    # the base copy lost its hand-written variants and nothing else
    assert by_id["clear-dinner"].prompt == (BOOK / "tasks" / "clear-dinner" / "prompt.md").read_text()
    assert vset.skipped == [{"task": "opaque-merchant", "rule": "reordered",
                             "why": "step 1 (reorder_clauses) changed nothing in the prompt"}]
    assert read_set(tmp_path / "set").to_json() == vset.to_json()


def test_committed_bookkeeping_set_matches_its_rules(tmp_path):
    """examples/bookkeeping-variants is generated, never hand-edited: regenerate and compare."""
    vset = generate(TASKS, load_rules(RULES), tmp_path / "set")
    committed = json.loads((EXAMPLES / "bookkeeping-variants" / "variants.json").read_text())
    assert committed == vset.to_json()
    assert tree_digests(EXAMPLES / "bookkeeping-variants") == tree_digests(tmp_path / "set")


def test_rule_digest_changes_with_the_rule(tmp_path):
    rules = tmp_path / "r.yaml"
    rules.write_text("rules:\n  - {id: a, steps: [{drop_words: [dinner]}]}\n")
    d1 = load_rules(rules).rules[0].digest()
    rules.write_text("rules:\n  - {id: a, steps: [{drop_words: [at]}]}\n")
    assert load_rules(rules).rules[0].digest() != d1


@pytest.mark.parametrize("text, field", [
    ("rules:\n  - {id: a, steps: [{drop_word: [x]}]}\n", "rules.0.steps.0"),
    ("rules:\n  - {id: A!, steps: [{strip: [spaces]}]}\n", "rules.0.id"),
    ("rules:\n  - {id: a, steps: [{strip: [spaces]}], expect: {behaviour: clarify}}\n", "rules.0.expect"),
    ("rules:\n  - {id: a, steps: [{strip: [spaces]}]}\n  - {id: a, steps: [{strip: [spaces]}]}\n", "rules"),
    ("rules: [\n", ""),
])
def test_bad_rules_name_file_and_field_and_write_nothing(tmp_path, capsys, text, field):
    rules = tmp_path / "r.yaml"
    rules.write_text(text)
    code = main(["variants", "generate", str(TASKS[0]), "--rules", str(rules), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and str(rules) in err and field in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_refuses_a_nonempty_out_and_foreign_task_names(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "keep.txt").write_text("mine")
    with pytest.raises(UsageError, match="not empty"):
        generate(TASKS, load_rules(RULES), tmp_path / "out")
    assert (tmp_path / "out" / "keep.txt").read_text() == "mine"
    rules = tmp_path / "r.yaml"
    rules.write_text("rules:\n  - {id: a, tasks: [nope], steps: [{strip: [spaces]}]}\n")
    with pytest.raises(SpecError, match="nope"):
        generate(TASKS[:1], load_rules(rules), tmp_path / "out2")
    assert not (tmp_path / "out2").exists()
    with pytest.raises(UsageError, match="not inside a suite"):
        generate([tmp_path], load_rules(rules), tmp_path / "out3")


def test_cli_generate_prints_each_variant(tmp_path, capsys):
    code = main(["variants", "generate", *map(str, TASKS), "--rules", str(RULES), "--out", str(tmp_path / "s")])
    out = capsys.readouterr().out
    assert code == 0
    assert "clear-dinner--opaque-no-hint  rule=opaque-no-hint  expect=clarify" in out
    assert "15 variant(s) of 3 task(s)" in out
