"""One math-verify worker process, started by ``MathVerifyPool`` as ``python _math_worker.py ...``.

It is run as a plain script (never imported by the SDK) so that starting one costs an interpreter plus
math-verify, and nothing of the parent's ``__main__`` or of ``verifiers`` is re-imported. math-verify's
own timeouts use ``signal.alarm``, which works here because verification runs in this process's main
thread; the parent adds a hard timeout on top and kills this process if it overruns.

Protocol (``multiprocessing.connection`` framing over two inherited pipe fds, pickled tuples):

* parent → worker: ``("batch", [(gold, pred), ...])`` or ``("quit",)``;
* worker → parent: ``("ready", pid)`` once warm (or ``("failed", message)``), then for every item of
  a batch, in order, ``(verdict, status, seconds, gold_parsed)`` with status ``"ok"``, ``"timeout"`` (math-verify's
  own timeout fired, so the verdict is ``False``) or ``"error"``, and whether the gold had to be parsed
  (it was not in this worker's cache).
"""

from __future__ import annotations

import os
import sys
import time
from collections import OrderedDict
from typing import Any


def _harden(memory_limit_mb: int) -> None:
    import signal

    # Ctrl-C reaches the whole process group; the parent decides when we stop.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:  # die with the parent even while stuck in C code (Linux only)
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        if os.getppid() == 1:  # the parent already died before prctl took effect
            os._exit(1)
    except (OSError, AttributeError):
        pass
    if memory_limit_mb > 0:
        try:
            import resource

            limit = memory_limit_mb * 1024 * 1024
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):
            pass


class _LRU:
    def __init__(self, size: int) -> None:
        self.size = size
        self.data: OrderedDict[str, Any] = OrderedDict()

    def get(self, key: str) -> Any:
        value = self.data.get(key)
        if value is not None:
            self.data.move_to_end(key)
        return value

    def put(self, key: str, value: Any) -> None:
        self.data[key] = value
        if len(self.data) > self.size:
            self.data.popitem(last=False)


def main(argv: list[str]) -> int:
    fd_in, fd_out, gold_cache_size, pred_cache_size, memory_limit_mb = (int(a) for a in argv)
    _harden(memory_limit_mb)
    from multiprocessing.connection import Connection

    conn_in = Connection(fd_in, writable=False)
    conn_out = Connection(fd_out, readable=False)
    try:
        import logging

        from math_verify import parse, verify

        timed_out = [False]

        class _TimeoutFlag(logging.Handler):
            """math-verify reports its own timeouts only as log warnings: turn them into a status."""

            def emit(self, record: logging.LogRecord) -> None:
                if record.getMessage().startswith("Timeout during"):
                    timed_out[0] = True

        mv_logger = logging.getLogger("math_verify")
        mv_logger.addHandler(_TimeoutFlag(logging.WARNING))
        mv_logger.setLevel(logging.WARNING)
        mv_logger.propagate = False  # keep eval output clean; the status carries the information
        verify(parse("\\boxed{\\frac{1}{2}}"), parse("\\boxed{0.5}"))  # warm sympy and the LaTeX parser
    except BaseException as exc:
        conn_out.send(("failed", f"{type(exc).__name__}: {exc}"))
        return 1

    import gc

    gc.collect()
    gc.freeze()  # imported modules live forever: keep them out of every later collection
    golds = _LRU(gold_cache_size)
    preds = _LRU(pred_cache_size)

    def parsed(cache: _LRU, text: str) -> tuple[Any, bool]:
        """The parse of ``\\boxed{text}`` and whether math-verify's own timeout cut it short. Golds and
        predictions are parsed the same way, so either cache may answer (a right answer is often
        written exactly as the gold)."""
        hit = cache.get(text)
        if hit is None:
            hit = (preds if cache is golds else golds).get(text)
        if hit is not None:
            return hit, False
        timed_out[0] = False
        value = parse("\\boxed{" + text + "}")
        if timed_out[0]:  # a timed-out parse is not a fact about the string: do not remember it
            return value, True
        cache.put(text, value)
        return value, False

    conn_out.send(("ready", os.getpid()))
    while True:
        try:
            msg = conn_in.recv()
        except (EOFError, OSError):
            return 0  # the parent went away
        if msg[0] != "batch":
            return 0
        for gold, pred in msg[1]:
            t0 = time.perf_counter()
            status = "ok"
            verdict = False
            gold_parsed = golds.get(gold) is None
            try:
                g, gold_timed_out = parsed(golds, gold)
                p, pred_timed_out = parsed(preds, pred)
                timed_out[0] = False
                if pred == gold and any(isinstance(x, str) and x.strip() for x in g):
                    # verify() compares every pair of extractions, the matched strings included:
                    # identical non-empty strings make it True, so skip the sympy comparisons.
                    verdict = True
                else:
                    verdict = bool(verify(g, p))
                # A timeout only matters when it may have hidden a match.
                if not verdict and (gold_timed_out or pred_timed_out or timed_out[0]):
                    status = "timeout"
            except Exception as exc:  # math-verify swallows its own errors; anything else is reported
                status = "error"
                verdict = False
                print(f"math-verify worker: {type(exc).__name__}: {exc}"[:500], file=sys.stderr)
            conn_out.send((verdict, status, time.perf_counter() - t0, gold_parsed))


if __name__ == "__main__":
    # Run as a script: our own directory is sys.path[0]; drop it so sibling modules never shadow anything.
    if sys.path and os.path.abspath(sys.path[0]) == os.path.dirname(os.path.abspath(__file__)):
        sys.path.pop(0)
    sys.exit(main(sys.argv[1:]))
