import pytest

from textwrapper import columns, fill, justify, shorten, wrap


def test_wrap_basic():
    assert wrap("the quick brown fox jumps", 10) == ["the quick", "brown fox", "jumps"]


def test_wrap_long_word_stands_alone():
    assert wrap("a extraordinarily b", 5) == ["a", "extraordinarily", "b"]


def test_wrap_indent():
    assert wrap("one two three", 8, indent="> ") == ["> one", "> two", "> three"]


def test_wrap_rejects_zero_width():
    with pytest.raises(ValueError):
        wrap("x", 0)


def test_wrap_collects_into_given_list():
    out = ["header"]
    wrap("a b", 10, lines=out)
    assert out == ["header", "a b"]


def test_fill_paragraphs():
    assert fill("aa bb cc\n\n\ndd ee", 5) == "aa bb\ncc\n\ndd ee"


def test_justify():
    assert justify("a b c", 9) == "a   b   c"
    assert justify("ab c d", 9) == "ab   c  d"
    assert justify("single", 8) == "single  "


def test_columns():
    assert columns(["a", "b", "c", "d", "e"], 7) == ["a  c  e", "b  d"]
    assert columns([], 10) == []


def test_shorten():
    assert shorten("Hello   world", 20) == "Hello world"
    assert shorten("Hello there wide world", 17) == "Hello there [...]"
