from wordfreq import top_words


def test_case_insensitive():
    assert top_words("Apple apple APPLE pear", 1) == [("apple", 3)]


def test_punctuation_stripped():
    assert dict(top_words("cat. cat, (cat) cat!", 5)) == {"cat": 4}


def test_apostrophes_inside_words_kept():
    assert dict(top_words("don't Don't dont", 5)) == {"don't": 2, "dont": 1}


def test_ties_alphabetical():
    assert top_words("b a c b a c d", 3) == [("a", 2), ("b", 2), ("c", 2)]


def test_limit_and_empty():
    assert top_words("x y z", 2) == [("x", 1), ("y", 1)]
    assert top_words("  ... --- ", 3) == []
