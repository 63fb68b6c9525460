"""A fixed pool of worker threads that maps a function over items, in chunks, keeping the input order."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

_STOP = object()


def chunks(items: Sequence[T], size: int) -> list[tuple[int, Sequence[T]]]:
    """``(start index, slice)`` pairs that cover ``items`` in order, ``size`` items each."""
    if size < 1:
        raise ValueError("chunk size must be at least 1")
    count = len(items) // size
    return [(i * size, items[i * size : (i + 1) * size]) for i in range(count)]


class WorkPool:
    """``workers`` threads, all started at once, that live until ``close()`` (or the end of a ``with``)."""

    def __init__(self, workers: int, *, name: str = "workpool") -> None:
        if workers < 1:
            raise ValueError("a pool needs at least one worker")
        self._tasks: queue.Queue[Any] = queue.Queue()
        self._threads = [
            threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(workers)
        ]
        self._closed = False
        for t in self._threads:
            t.start()

    @property
    def workers(self) -> int:
        return len(self._threads)

    def _work(self) -> None:
        while True:
            job = self._tasks.get()
            if job is _STOP:
                return
            func, start, part, results, errors, done = job
            try:
                for offset, item in enumerate(part):
                    results[start + offset] = func(item)
            except BaseException as exc:  # reported to the caller of map()
                errors.append(exc)
            finally:
                done.release()

    def map(self, func: Callable[[T], R], items: Iterable[T], *, chunksize: int = 1) -> list[R]:
        """``[func(x) for x in items]``, computed by the workers ``chunksize`` items at a time."""
        if self._closed:
            raise RuntimeError("the pool is closed")
        seq = list(items)
        results: list[Any] = [None] * len(seq)
        errors: list[BaseException] = []
        done = threading.Semaphore(0)
        parts = chunks(seq, chunksize)
        for start, part in parts:
            self._tasks.put((func, start, part, results, errors, done))
        for _ in parts:
            done.acquire()
        if errors:
            raise errors[0]
        return results

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for _ in self._threads:
            self._tasks.put(_STOP)
        for t in self._threads:
            t.join()

    def __enter__(self) -> WorkPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
