import pytest

from tokenizer import Token, TokenizeError, tokenize, values


def test_simple_expression():
    assert values("a + 12 * (b - 3)") == ["a", "+", "12", "*", "(", "b", "-", "3", ")"]


def test_kinds_and_positions():
    assert tokenize("let x = 1") == [
        Token("KEYWORD", "let", 0), Token("NAME", "x", 4), Token("OP", "=", 6), Token("NUMBER", "1", 8)
    ]


def test_numbers():
    assert values("3.14 2e10 1.5E-3") == ["3.14", "2e10", "1.5E-3"]


def test_strings_and_escapes():
    toks = tokenize('"a\\tb" "it\\"s"')
    assert [t.value for t in toks] == ["a\tb", 'it"s']
    assert all(t.kind == "STRING" for t in toks)


def test_unterminated_string():
    with pytest.raises(TokenizeError) as info:
        tokenize('x = "abc')
    assert info.value.pos == 4


def test_unknown_escape():
    with pytest.raises(TokenizeError):
        tokenize(r'"\q"')


def test_comments_skipped():
    assert values("a # the rest\nb") == ["a", "b"]


def test_unexpected_character():
    with pytest.raises(TokenizeError):
        tokenize("a $ b")


def test_names_with_underscores_and_digits():
    assert values("_x1 y_2") == ["_x1", "y_2"]
