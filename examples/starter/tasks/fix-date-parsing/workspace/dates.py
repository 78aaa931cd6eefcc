"""Parsing of user-entered dates (see README.md for the accepted formats)."""

from datetime import date, datetime

FORMATS = (
    "%Y-%m-%d",
    "%m/%d/%Y",
    "%d %B %Y",
)


def parse_date(text):
    """Parse ``text`` in one of the accepted formats; raise ValueError otherwise."""
    value = text.strip()
    for fmt in FORMATS:
        try:
            return datetime.strptime(value, fmt).date()
        except ValueError:
            continue
    raise ValueError(f"unrecognised date: {text!r}")


def _example():
    return date(2024, 3, 5)
