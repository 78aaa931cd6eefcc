"""Each transformation on concrete prompts: what changes, and what must not (dates, trailing newline)."""

from __future__ import annotations

from assay.variants.transforms import drop_words, glossary, number_format, reorder_clauses, strip, swap

PROMPT = "Book this in my ledger: dinner at Harbor Dumpling House, 186 CNY, on 2026-03-14.\n"


def test_drop_words_removes_whole_words_only_and_tidies_spacing():
    assert drop_words(PROMPT, ["dinner"]) == "Book this in my ledger: at Harbor Dumpling House, 186 CNY, on 2026-03-14.\n"
    assert drop_words("Dinnerware, DINNER, dinner.\n", ["dinner"]) == "Dinnerware.\n"  # any case, whole words
    assert drop_words("晚饭 阿文潮汕食府 620 家庭支出", ["晚饭"]) == "阿文潮汕食府 620 家庭支出"


def test_reorder_reverses_clauses_and_keeps_the_final_stop():
    assert reorder_clauses(PROMPT) == "on 2026-03-14, 186 CNY, Book this in my ledger: dinner at Harbor Dumpling House.\n"
    assert reorder_clauses("one clause only.\n") == "one clause only.\n"


def test_strip_spaces_and_punctuation_but_not_inside_numbers():
    assert strip(PROMPT, ["spaces"]) == "Bookthisinmyledger:dinneratHarborDumplingHouse,186CNY,on2026-03-14.\n"
    assert strip("Pay 32.5 CNY, on 2026-03-14!\n", ["punctuation"]) == "Pay 32.5 CNY on 2026-03-14\n"


def test_swap_is_literal():
    assert swap(PROMPT, "Harbor Dumpling House", "Xinghe Trading").count("Xinghe Trading") == 1


def test_number_formats_leave_dates_alone():
    assert number_format(PROMPT, "decimal_comma") == PROMPT.replace("186 CNY", "186,00 CNY")
    assert number_format("Paid 1234.5 on 2026-03-14\n", "decimal_comma") == "Paid 1.234,50 on 2026-03-14\n"
    assert number_format("Paid 12345 on 01/02/2026\n", "grouped") == "Paid 12,345 on 01/02/2026\n"
    assert number_format("Paid 186 today\n", "two_decimals") == "Paid 186.00 today\n"


def test_glossary_longest_term_first_and_whole_words():
    out = glossary(PROMPT, {"Book this in my ledger": "记账", "dinner": "晚饭", "in": "X"})
    assert out.startswith("记账: 晚饭 at Harbor")  # "in" inside the longer term was not translated first
    assert "Dumpling" in out
