from lrucache import LRUCache, memoize


def test_get_marks_entry_as_recently_used():
    c = LRUCache(2)
    c.put("a", 1)
    c.put("b", 2)
    assert c.get("a") == 1
    c.put("c", 3)
    assert "a" in c, "a was read after b was written, so b must be evicted first"
    assert "b" not in c


def test_keys_order_follows_reads():
    c = LRUCache(3)
    for k in "xyz":
        c.put(k, k)
    c.get("x")
    assert c.keys() == ["y", "z", "x"]


def test_hit_and_miss_counters():
    c = LRUCache(2)
    c.put("a", 1)
    c.get("a")
    c.get("b")
    assert (c.hits, c.misses) == (1, 1)


def test_memoize_keeps_hot_entries():
    calls = []

    @memoize(2)
    def ident(x):
        calls.append(x)
        return x

    ident(1)
    ident(2)
    ident(1)
    ident(3)
    ident(1)
    assert calls == [1, 2, 3]
