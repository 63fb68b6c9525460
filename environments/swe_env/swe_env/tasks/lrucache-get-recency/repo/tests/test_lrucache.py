import pytest

from lrucache import LRUCache, memoize


def test_put_and_get():
    c = LRUCache(2)
    c.put("a", 1)
    assert c.get("a") == 1
    assert c.get("missing", "dflt") == "dflt"


def test_capacity_must_be_positive():
    with pytest.raises(ValueError):
        LRUCache(0)


def test_eviction_of_oldest_write():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("c", 3)
    assert "a" not in c and "b" in c and "c" in c
    assert c.evictions == 1


def test_overwrite_refreshes():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    c.put("a", 10)
    c.put("c", 3)
    assert c.keys() == ["a", "c"]
    assert c.get("a") == 10


def test_pop():
    c = LRUCache(2)
    c.put("a", 1)
    assert c.pop("a") == 1
    assert c.pop("a", None) is None
    with pytest.raises(KeyError):
        c.pop("a")


def test_ttl_expiry():
    now = [0.0]
    c = LRUCache(4, ttl=10, clock=lambda: now[0])
    c.put("a", 1)
    now[0] = 9.0
    assert "a" in c
    now[0] = 10.0
    assert c.get("a") is None
    assert len(c) == 0


def test_memoize_calls_once():
    calls = []

    @memoize(4)
    def square(x):
        calls.append(x)
        return x * x

    assert square(3) == 9 and square(3) == 9
    assert calls == [3]
    assert square.__name__ == "square"
