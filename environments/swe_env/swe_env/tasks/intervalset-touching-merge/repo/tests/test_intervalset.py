from intervalset import IntervalSet


def test_add_disjoint_keeps_order():
    s = IntervalSet([(10, 12), (1, 3)])
    assert list(s) == [(1, 3), (10, 12)]


def test_add_overlapping_merges():
    s = IntervalSet([(1, 5), (3, 8)])
    assert list(s) == [(1, 8)]


def test_empty_interval_is_ignored():
    s = IntervalSet([(4, 4)])
    assert len(s) == 0


def test_add_rejects_reversed_bounds():
    import pytest

    with pytest.raises(ValueError):
        IntervalSet().add(5, 1)


def test_contains():
    s = IntervalSet([(1, 3), (7, 9)])
    assert 1 in s and 2 in s and 8 in s
    assert 3 not in s and 0 not in s and 9 not in s
    assert "2" not in s


def test_remove_splits():
    s = IntervalSet([(0, 10)])
    s.remove(3, 5)
    assert list(s) == [(0, 3), (5, 10)]


def test_remove_everything():
    s = IntervalSet([(0, 4), (6, 8)])
    s.remove(-1, 100)
    assert list(s) == []
    assert s.total() == 0


def test_total_counts_integers():
    assert IntervalSet([(0, 3), (10, 20)]).total() == 13


def test_overlaps():
    s = IntervalSet([(5, 10)])
    assert s.overlaps(9, 12)
    assert not s.overlaps(10, 12)
    assert not s.overlaps(0, 5)


def test_repr():
    assert repr(IntervalSet([(1, 2)])) == "IntervalSet([1, 2))"
