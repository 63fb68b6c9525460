"""A pool as wide as its input: 100 worker threads at once, as concurrency tests of real libraries do."""

import threading

from workpool import WorkPool, chunks

WIDE = 100


def test_hundred_workers_run_at_the_same_time():
    # every worker must be alive and waiting at once for the barrier to open
    barrier = threading.Barrier(WIDE, timeout=60)
    with WorkPool(WIDE) as pool:
        arrived = pool.map(lambda _: barrier.wait(), range(WIDE))
    assert sorted(arrived) == list(range(WIDE))


def test_hundred_workers_keep_the_order():
    with WorkPool(WIDE) as pool:
        assert pool.map(str, range(1000), chunksize=10) == [str(i) for i in range(1000)]


def test_chunked_map_keeps_the_last_partial_chunk():
    with WorkPool(WIDE) as pool:
        out = pool.map(lambda x: x + 1, range(1005), chunksize=10)
    assert out[-5:] == [1001, 1002, 1003, 1004, 1005], "the last, shorter chunk was never computed"
    assert out == list(range(1, 1006))


def test_chunks_cover_every_item():
    items = list(range(7))
    assert chunks(items, 3) == [(0, [0, 1, 2]), (3, [3, 4, 5]), (6, [6])]
    assert chunks([], 3) == []
