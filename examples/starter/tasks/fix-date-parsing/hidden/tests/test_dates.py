from datetime import date

import pytest

from dates import parse_date


def test_iso():
    assert parse_date("2024-03-05") == date(2024, 3, 5)


def test_day_first():
    assert parse_date("05/03/2024") == date(2024, 3, 5)


def test_day_first_day_above_twelve():
    assert parse_date("31/12/2023") == date(2023, 12, 31)


def test_abbreviated_month():
    assert parse_date("7 Mar 2024") == date(2024, 3, 7)


def test_full_month():
    assert parse_date("7 March 2024") == date(2024, 3, 7)


def test_whitespace_ignored():
    assert parse_date("  2024-01-02\n") == date(2024, 1, 2)


def test_returns_date_not_datetime():
    assert type(parse_date("2024-03-05")) is date


@pytest.mark.parametrize("bad", ["", "2024/03/05", "03-05-2024", "13/13/2024", "yesterday", "7 Marchh 2024"])
def test_rejects_undocumented_formats(bad):
    with pytest.raises(ValueError):
        parse_date(bad)
