from intervalset import IntervalSet


def test_touching_intervals_merge():
    s = IntervalSet([(1, 3), (3, 5)])
    assert list(s) == [(1, 5)], "[1, 3) and [3, 5) touch and must become one interval"


def test_touching_on_the_left_merges():
    s = IntervalSet([(5, 9)])
    s.add(2, 5)
    assert list(s) == [(2, 9)]


def test_bridge_merges_three():
    s = IntervalSet([(0, 2), (4, 6)])
    s.add(2, 4)
    assert list(s) == [(0, 6)]
    assert len(s) == 1


def test_gaps_after_touching_adds():
    s = IntervalSet()
    for start in range(0, 10, 2):
        s.add(start, start + 2)
    assert s.gaps(0, 12) == [(10, 12)]
    assert len(s) == 1


def test_gaps_between_disjoint():
    s = IntervalSet([(2, 4), (6, 8)])
    assert s.gaps(0, 10) == [(0, 2), (4, 6), (8, 10)]


def test_remove_then_add_back():
    s = IntervalSet([(0, 10)])
    s.remove(4, 6)
    s.add(4, 6)
    assert list(s) == [(0, 10)]
