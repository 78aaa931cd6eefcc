"""Pagination helpers for the orders API.

Pages are 1-based: page 1 holds items[0:per_page].
"""


def page_count(total, per_page):
    """Number of pages needed to show ``total`` items, ``per_page`` at a time."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    if total < 0:
        raise ValueError("total must not be negative")
    return total // per_page


def paginate(items, page, per_page):
    """The items shown on ``page`` (1-based); an empty list past the last page."""
    if page < 1:
        raise ValueError("pages start at 1")
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    start = page * per_page
    return list(items[start:start + per_page])
