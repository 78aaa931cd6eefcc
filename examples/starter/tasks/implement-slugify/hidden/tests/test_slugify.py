import pytest

from textutil import slugify, word_count


@pytest.mark.parametrize("title,slug", [
    ("Hello World", "hello-world"),
    ("  Hello,   World!  ", "hello-world"),
    ("Crème Brûlée", "creme-brulee"),
    ("Python 3.11 -- what's new?", "python-3-11-what-s-new"),
    ("---", "untitled"),
    ("", "untitled"),
])
def test_examples(title, slug):
    assert slugify(title) == slug


def test_cut_at_word_boundary():
    assert slugify("the quick brown fox jumps", max_len=15) == "the-quick-brown"
    assert slugify("the quick brown fox jumps", max_len=14) == "the-quick"


def test_long_single_word_is_cut():
    assert slugify("a" * 80, max_len=10) == "a" * 10


def test_only_allowed_characters():
    slug = slugify("Ünïcödé ☃ snow & ice / 2024")
    assert slug == "unicode-snow-ice-2024"
    assert set(slug) <= set("abcdefghijklmnopqrstuvwxyz0123456789-")


def test_word_count_unchanged():
    assert word_count("a b  c") == 3
