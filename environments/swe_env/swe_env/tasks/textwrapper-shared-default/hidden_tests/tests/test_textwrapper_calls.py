from textwrapper import fill, wrap


def test_wrap_calls_are_independent():
    first = wrap("alpha beta", 20)
    second = wrap("gamma delta", 20)
    assert first == ["alpha beta"]
    assert second == ["gamma delta"]


def test_wrap_result_not_shared():
    a = wrap("x", 5)
    a.append("mutated")
    assert wrap("y", 5) == ["y"]


def test_fill_twice_gives_same_result():
    text = "one two three four five six"
    assert fill(text, 9) == fill(text, 9) == "one two\nthree\nfour five\nsix"
