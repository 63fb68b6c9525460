"""The garbage collector during a run: fewer, cheaper collections while thousands of rollouts are live.

With 4,096 rollouts in flight, CPython's default thresholds (a young collection every 700 allocations, a
full one whenever a quarter more objects survived) spent about half of a single-turn run's CPU time in the
collector (``benchmarks/scale.py``, measured with ``gc.callbacks``). During a run, objects that existed
before it (modules, the environment, its dataset) are frozen out of collections (``gc.freeze``) and the
young generation is collected every ``YOUNG_THRESHOLD`` allocations; both are undone when the last
concurrent run ends. Cycles are still collected, so memory stays bounded on long runs.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

#: Allocations (net of deallocations) between young collections during a run (CPython's default: 700).
YOUNG_THRESHOLD = 50_000
#: Full collections only after this many middle ones (CPython's default: 10).
OLD_THRESHOLD = 100

_depth = 0
_saved: tuple[int, int, int] | None = None


@contextlib.contextmanager
def run_gc() -> Iterator[None]:
    """Tune the collector for the duration of a run (nested and concurrent runs share one tuning)."""
    global _depth, _saved
    if _depth == 0:
        _saved = gc.get_threshold()
        gc.freeze()
        gc.set_threshold(max(_saved[0], YOUNG_THRESHOLD), _saved[1], max(_saved[2], OLD_THRESHOLD))
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            gc.unfreeze()
            _saved = None
