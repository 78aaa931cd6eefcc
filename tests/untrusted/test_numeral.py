"""Numbers in names and data assay did not write: only ASCII digits, only real counts and amounts.
A value that is none is None, never an exception (every caller turns None into "no number here")."""

from __future__ import annotations

import pytest

from assay.untrusted.numeral import MOST, amount, canonical_decimal, count, decimal

MANY_DIGITS = "9" * 5000  # past CPython's int-from-text limit (4,300 digits): int() raises ValueError


@pytest.mark.parametrize(("text", "want"), [("1", 1), ("01", 1), ("0", 0), ("", None), (" 1", None), ("-1", None),
                                            ("\u00b2", None), ("\u0661", None), ("1.0", None), (MANY_DIGITS, None)])
def test_decimal_reads_ascii_digits_only(text: str, want: int | None) -> None:
    assert decimal(text) == want


@pytest.mark.parametrize(("text", "want"), [("1", 1), ("10", 10), ("0", 0), ("01", None), ("00", None),
                                            ("\u0661", None), (MANY_DIGITS, None)])
def test_canonical_decimal_is_a_number_as_str_writes_it(text: str, want: int | None) -> None:
    assert canonical_decimal(text) == want


@pytest.mark.parametrize(("value", "want"), [(3, 3), (0, 0), (2.9, 2), ("12", 12), (" 12 ", 12), (MOST, MOST),
                                             (MOST + 1, None), (-1, None), (float("nan"), None), (float("inf"), None),
                                             (1e300, None), (True, None), ("abc", None), ("\u0661\u0662", None),
                                             ([1], None), (None, None), (MANY_DIGITS, None)])
def test_count(value: object, want: int | None) -> None:
    assert count(value) == want


@pytest.mark.parametrize(("value", "want"), [(0.25, 0.25), (2, 2.0), ("0.5", 0.5), ("1e3", 1000.0), (-0.0, 0.0),
                                             (-0.5, None), (float("nan"), None), (float("-inf"), None), ("1e999", None),
                                             ("nan", None), ("inf", None), ("\u0661", None), (True, None),
                                             (10**400, None), ({"a": 1}, None), (MANY_DIGITS, None)])
def test_amount(value: object, want: float | None) -> None:
    got = amount(value)
    assert got == want and (got is None or str(got) != "-0.0")
