from tokenizer import tokenize, values


def test_comparison_operators_are_single_tokens():
    assert values("a <= b >= c == d != e") == ["a", "<=", "b", ">=", "c", "==", "d", "!=", "e"]


def test_power_and_floor_division():
    assert values("2 ** 3 // 4") == ["2", "**", "3", "//", "4"]


def test_arrow():
    toks = tokenize("x -> y")
    assert [(t.kind, t.value, t.pos) for t in toks] == [("NAME", "x", 0), ("OP", "->", 2), ("NAME", "y", 5)]


def test_single_char_operators_still_work():
    assert values("a<b") == ["a", "<", "b"]
