import pytest

from pager import page_count, paginate

ITEMS = list(range(1, 24))  # 23 items


def test_first_page_starts_with_first_item():
    assert paginate(ITEMS, 1, 10) == list(range(1, 11))


def test_middle_page():
    assert paginate(ITEMS, 2, 10) == list(range(11, 21))


def test_last_partial_page():
    assert paginate(ITEMS, 3, 10) == [21, 22, 23]


def test_past_the_end_is_empty():
    assert paginate(ITEMS, 4, 10) == []


def test_every_item_on_exactly_one_page():
    for per_page in (1, 3, 7, 23, 50):
        pages = page_count(len(ITEMS), per_page)
        seen = [x for p in range(1, pages + 1) for x in paginate(ITEMS, p, per_page)]
        assert seen == ITEMS, per_page


@pytest.mark.parametrize("total,per_page,expected", [(0, 10, 0), (10, 10, 1), (11, 10, 2), (23, 10, 3), (1, 5, 1)])
def test_page_count(total, per_page, expected):
    assert page_count(total, per_page) == expected


def test_invalid_arguments_still_rejected():
    with pytest.raises(ValueError):
        paginate(ITEMS, 0, 10)
    with pytest.raises(ValueError):
        page_count(10, 0)
