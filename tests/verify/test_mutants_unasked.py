"""Which surviving mutants are of a file the reference solution wrote for itself
(``verify/mutants.mark_unasked``; the audit's use: tests/environments/test_audit.py)."""

from __future__ import annotations

from assay.verify.mutants import MutantResult, mark_unasked


def _r(name: str, survived: bool, file: str | None) -> MutantResult:
    return MutantResult("t", "base", name, survived, file=file)


def _results() -> list[MutantResult]:
    return [_r("delete answer.txt", False, "answer.txt"), _r("alter one value in answer.txt", True, "answer.txt"),
            _r("delete solve_helper.py", True, "solve_helper.py"), _r("truncate solve_helper.py", True, "solve_helper.py"),
            _r("extra side effect: change untouched input.csv", True, None)]


def test_only_a_helper_the_prompt_never_names_is_set_aside() -> None:
    marked = {r.mutant: r.unasked for r in mark_unasked(_results(), "Write the answer to /app/answer.txt.")}
    assert marked == {"delete answer.txt": False, "alter one value in answer.txt": False,
                      "delete solve_helper.py": True, "truncate solve_helper.py": True,
                      "extra side effect: change untouched input.csv": False}


def test_a_named_file_or_a_task_whose_outputs_are_all_unread_keeps_its_survivors() -> None:
    named = mark_unasked(_results(), "Write the answer; keep solve_helper.py beside it.")
    assert not any(r.unasked for r in named)
    unread = [_r("delete answer.txt", True, "answer.txt"), _r("delete helper.py", True, "helper.py")]
    assert not any(r.unasked for r in mark_unasked(unread, "Write answer.txt."))
    partial = [_r("delete out/answer.txt", False, "out/answer.txt"), _r("delete answer.txt.bak", True, "answer.txt.bak")]
    assert mark_unasked(partial, "Write out/answer.txt.")[1].unasked  # a longer name is not the named file
