"""Small text helpers for the blog engine."""


def word_count(text):
    """Number of whitespace-separated words in ``text``."""
    return len(text.split())


def slugify(title, max_len=60):
    """Turn a title into a URL slug.

    - letters are lower-cased and accents removed ("Crème Brûlée" -> "creme-brulee");
    - every run of characters other than a-z and 0-9 becomes a single hyphen;
    - there is never a hyphen at the start or the end;
    - if the slug is longer than ``max_len``, it is cut at the last hyphen that keeps it
      within ``max_len`` (a single word longer than ``max_len`` is cut at ``max_len``);
    - a title with no letters or digits gives "untitled".
    """
    raise NotImplementedError
