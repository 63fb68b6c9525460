import threading

import pytest

from workpool import WorkPool


def square(x):
    return x * x


def test_map_keeps_the_input_order():
    with WorkPool(4) as pool:
        assert pool.map(square, range(20)) == [x * x for x in range(20)]


def test_a_worker_error_reaches_the_caller():
    def boom(x):
        if x == 3:
            raise KeyError(x)
        return x

    with WorkPool(2) as pool, pytest.raises(KeyError):
        pool.map(boom, range(6))


def test_pool_needs_a_worker():
    with pytest.raises(ValueError):
        WorkPool(0)


def test_closed_pool_refuses_work():
    pool = WorkPool(2)
    pool.close()
    with pytest.raises(RuntimeError):
        pool.map(square, [1])


def test_workers_are_threads_of_this_process():
    before = threading.active_count()
    with WorkPool(8, name="t") as pool:
        assert pool.workers == 8
        assert threading.active_count() == before + 8
    assert threading.active_count() == before
