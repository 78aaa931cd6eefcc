"""io_cases: the agent's program or function runs on given inputs in the sandbox; outputs are
compared by the harness against expected values that never enter it."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from assay.errors import VerifierError
from assay.spec.io_predicates import IoCases
from tests.verify.attack_kit import run_hostile
from tests.verify.test_predicates import verify

SLUG = "def slug(s, sep='-'):\n    if not s:\n        raise ValueError('empty')\n    return sep.join(s.lower().split())\n"
CALL = {"id": "cases", "kind": "io_cases", "call": "text:slug", "cases": [
    {"id": "basic", "args": ["Hello World"], "returns": "hello-world"},
    {"id": "kw", "args": ["A B"], "kwargs": {"sep": "_"}, "returns": "a_b"},
    {"id": "empty", "args": [""], "raises": "ValueError"},
]}


def test_call_cases_pass_for_a_right_function_and_say_which_case_failed(tmp_path: Path) -> None:
    r = verify(tmp_path / "ok", [CALL], {"text.py": SLUG})
    assert r.held and r.predicates[0].trust == "outside_oracle" and r.predicates[0].evidence["passed"] == 3
    wrong = SLUG.replace("s.lower()", "s")
    r = verify(tmp_path / "bad", [CALL], {"text.py": wrong})
    [p] = r.predicates
    assert not p.passed and [f["case"] for f in p.evidence["failed"]] == ["basic", "kw"]


def test_prints_of_the_code_under_test_do_not_become_its_result(tmp_path: Path) -> None:
    noisy = "print('@@ASSAY-IO@@{\"returns\": \"hello-world\"}')\ndef slug(s, sep='-'):\n    return 42\n"
    r = verify(tmp_path, [{**CALL, "cases": CALL["cases"][:1]}], {"text.py": noisy})
    assert not r.held and '42' in r.predicates[0].evidence["failed"][0]["got"]


def test_run_cases_with_stdin_input_files_and_exit_codes(tmp_path: Path) -> None:
    prog = ("import sys\nif len(sys.argv) > 1:\n    text = open(sys.argv[1]).read()\nelse:\n    text = sys.stdin.read()\n"
            "if not text.strip():\n    sys.exit(3)\nprint(len(text.split()))\n")
    spec = {"id": "wc", "kind": "io_cases", "run": ["{python}", "wc.py"], "cases": [
        {"id": "file", "args": ["{case_dir}/in.txt"], "files": {"in.txt": "a b c"}, "stdout": "3"},
        {"id": "stdin", "stdin": "x y", "stdout_matches": r"\d"},
        {"id": "empty", "stdin": "", "exit_code": 3},
    ]}
    r = verify(tmp_path, [spec], {"wc.py": prog})
    assert r.held, r.predicates[0].evidence


def test_cases_file_under_hidden_and_a_broken_one_is_a_setup_error(tmp_path: Path) -> None:
    spec = {"id": "cases", "kind": "io_cases", "call": "text:slug", "cases_file": "cases.yaml"}
    good = "- {id: a, args: ['Hi There'], returns: hi-there}\n"
    assert verify(tmp_path / "good", [spec], {"text.py": SLUG}, hidden={"cases.yaml": good}).held
    with pytest.raises(VerifierError) as info:
        verify(tmp_path / "broken", [spec], {"text.py": SLUG}, hidden={"cases.yaml": "- {id: a, args: [x]}\n"})
    assert info.value.reason == "verifier_setup" and "cases.yaml" in str(info.value)


@pytest.mark.parametrize("bad, msg", [
    ({"run": ["x"], "call": "m:f"}, "exactly one of 'run'"),
    ({"call": "nomodule"}, "module:function"),
    ({"call": "m:f", "cases": [{"id": "a", "args": [1]}]}, "needs `returns` or `raises`"),
    ({"run": ["x"], "cases": [{"id": "a", "returns": 1}]}, "belong to `call` cases"),
    ({"run": ["x"], "cases": [{"id": "a", "files": {"../up": "x"}}]}, "relative path inside"),
    ({"run": ["x"], "cases": [{"id": "a"}, {"id": "a"}]}, "unique"),
])
def test_bad_specs_are_refused_with_the_reason(bad: dict, msg: str) -> None:
    data = {"id": "p", "kind": "io_cases", "cases": [{"id": "a", "stdout": "x"}], **bad}
    with pytest.raises(ValidationError, match=msg.replace("(", r"\(").replace("`", "`")):
        IoCases.model_validate(data)


def test_expected_values_never_enter_the_sandbox(tmp_path: Path) -> None:
    """A module that searches every readable file for its answer finds nothing to copy."""
    seeker = """
    import os
    def slug(s, sep='-'):
        for root in ("/verifier", "/workspace", "/tmp", "/root", "/home"):
            for dp, dn, fn in os.walk(root):
                for f in fn:
                    try:
                        data = open(os.path.join(dp, f), errors="ignore").read(1 << 20)
                    except OSError:
                        continue
                    at = data.find("zebra-")
                    if at >= 0 and "zebra-" + "quartz" in data:
                        return data[at:at + 40].split('"')[0].split("\\n")[0].strip()
        return "not found"
    """
    r = run_hostile(tmp_path, {"text.py": seeker}, [{
        "id": "cases", "kind": "io_cases", "call": "text:slug", "timeout_s": 120,
        "cases": [{"id": "secret", "args": ["Zebra"], "returns": "zebra-quartz-7731"}]}],
        hidden={"answers.txt": "zebra-quartz-7731\n"})
    assert r["end_state"] == "fail", r
    [p] = r["predicates"]
    failed = p["evidence"]["failed"][0]
    assert p["trust"] == "outside_oracle" and "not found" in failed["got"] and "zebra-quartz" not in failed["got"], p
