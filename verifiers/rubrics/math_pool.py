"""A warm pool of math-verify worker processes with a hard per-item timeout.

Why processes: math-verify bounds its own work with ``signal.alarm``, which only works in a process's
main thread, and some inputs (``10^{10^{10^{10}}}``, deep ``\\frac`` nests) run for seconds inside sympy
or C code where no signal or thread can stop them. Each worker runs verification in its main thread; the
pool kills a worker that overruns an item's timeout and starts a replacement, so no item blocks longer
than its timeout and the other workers stay warm.

Why it is fast: a verdict is exactly ``verify(parse(box(gold)), parse(box(pred)))`` with math-verify's
defaults, but

* obvious cases (two plain integers, equal plain decimals) are decided in-process without math-verify;
* verdicts are cached per ``(gold, pred)`` (RL groups repeat answers) and duplicate in-flight pairs share
  one verification;
* every worker caches parsed golds and predictions, and items are routed to the worker that already
  parsed their gold (a gold is parsed once, not once per rollout), in batches of the same gold.

The timeout clock of an item starts when its worker starts it (waiting for a free worker is separate).
Nothing starts at import or construction: workers are spawned by ``start()`` or the first ``submit()``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures as cf
import math
import os
import re
import subprocess
import sys
import threading
import time
import weakref
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from decimal import Decimal
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Literal

from verifiers._exit_hooks import register_exit_hook
from verifiers.errors import ScoringError

VerifyStatus = Literal["ok", "timeout", "crashed", "error"]
VerifySource = Literal["worker", "fast", "cache"]

_WORKER = Path(__file__).with_name("_math_worker.py")
#: Past this many seconds in the queue an item is taken by the next free worker, gold cached or not.
_MAX_AFFINITY_WAIT = 2.0
_CLOSED = "the math-verify pool was closed before this answer was verified"
_INT = re.compile(r"-?(?:0|[1-9][0-9]{0,11})")
_DEC = re.compile(r"-?[0-9]{1,12}(?:\.[0-9]{1,12})?")


@dataclass(frozen=True, slots=True)
class VerifyOutcome:
    """The verdict on one (gold, prediction) pair.

    ``status``: ``ok`` (verified), ``timeout`` (math-verify's own timeout or the pool's hard timeout cut
    verification short; ``correct`` is False), ``crashed`` (the worker died on this item) or ``error``
    (math-verify raised). ``source`` says who decided: a ``worker``, the in-process ``fast`` path, or the
    verdict ``cache``. ``seconds`` is the verification time in the worker (0 when not verified there).
    """

    correct: bool
    status: VerifyStatus = "ok"
    source: VerifySource = "worker"
    seconds: float = 0.0
    killed: bool = False  # the hard timeout fired and the worker was replaced

    @property
    def timed_out(self) -> bool:
        return self.status == "timeout"


def quick_verdict(gold: str, pred: str) -> bool | None:
    """Decide pairs whose math-verify verdict is certain without running it, else ``None``.

    Two plain integers of at most 12 digits are equal exactly when math-verify says so; two plain
    decimals with the same value always verify (unequal decimals are left to math-verify, whose
    6-digit rounding may still call them equal).
    """
    if _INT.fullmatch(gold) and _INT.fullmatch(pred):
        return int(gold) == int(pred)
    if _DEC.fullmatch(gold) and _DEC.fullmatch(pred) and Decimal(gold) == Decimal(pred):
        return True
    return None


@dataclass
class PoolStats:
    submitted: int = 0
    #: Items handed to a worker process (a worker is verifying them from this moment on).
    dispatched: int = 0
    fast: int = 0
    cached: int = 0
    deduplicated: int = 0
    verified: int = 0
    gold_parses: int = 0
    timeouts: int = 0
    kills: int = 0
    crashes: int = 0
    spawns: int = 0


@dataclass(eq=False)
class _Task:
    gold: str
    pred: str
    timeout: float
    waiters: list[cf.Future[VerifyOutcome]] = field(default_factory=list)
    queued_at: float = field(default_factory=time.monotonic)

    @property
    def wanted(self) -> bool:
        return any(not w.done() for w in self.waiters)


class _Slot:
    """One worker process and the thread that feeds it."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.proc: subprocess.Popen[bytes] | None = None
        self.send: Connection | None = None
        self.recv: Connection | None = None
        self.ready = False
        #: Mirror of the worker's gold LRU, for routing.
        self.golds: OrderedDict[str, None] = OrderedDict()
        self.thread: threading.Thread | None = None
        self.busy = False
        self.lock = threading.Lock()  # guards proc/send/recv against close() racing the slot thread


_LIVE_POOLS: weakref.WeakSet[MathVerifyPool] = weakref.WeakSet()


def _close_live_pools() -> None:
    """At exit: kill the workers of pools nobody closed."""
    for pool in list(_LIVE_POOLS):
        pool.close(wait=False)


class MathVerifyPool:
    """Verify (gold, prediction) answer pairs with math-verify in ``workers`` processes.

    Thread-safe and event-loop agnostic: ``submit`` returns a ``concurrent.futures.Future``; ``verify``
    awaits one from any event loop. A closed pool cannot be restarted (make a new one).
    """

    def __init__(
        self,
        workers: int | None = None,
        *,
        timeout: float = 10.0,
        batch_size: int = 16,
        cache_size: int = 50_000,
        parse_cache_size: int = 8192,
        memory_limit_mb: int = 4096,
        startup_timeout: float = 120.0,
    ) -> None:
        if workers is None:
            workers = max(1, min(4, os.cpu_count() or 1))
        if workers < 1:
            raise ValueError("MathVerifyPool needs at least one worker")
        if timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        if batch_size < 1:
            raise ValueError("batch_size must be at least 1")
        self.workers = workers
        self.timeout = float(timeout)
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.parse_cache_size = parse_cache_size
        self.memory_limit_mb = memory_limit_mb
        self.startup_timeout = startup_timeout
        self.stats = PoolStats()
        self._cv = threading.Condition()
        self._pending: OrderedDict[str, deque[_Task]] = OrderedDict()
        self._pending_count = 0
        self._inflight: dict[tuple[str, str], _Task] = {}
        self._cache: OrderedDict[tuple[str, str], VerifyOutcome] = OrderedDict()
        self._slots = [_Slot(i) for i in range(workers)]
        self._started = False
        self._closed = False
        self._broken: str | None = None

    # --- lifecycle ---------------------------------------------------------------------------------
    def start(self) -> None:
        """Spawn the workers in the background (idempotent; ``submit`` calls it)."""
        with self._cv:
            if self._closed:
                raise ScoringError("this MathVerifyPool was closed; create a new one")
            if self._started:
                return
            self._started = True
            register_exit_hook("verifiers.rubrics.math_pool", _close_live_pools)
            _LIVE_POOLS.add(self)
            for slot in self._slots:
                slot.thread = threading.Thread(
                    target=self._slot_loop, args=(slot,), name=f"math-verify-{slot.index}", daemon=True
                )
                slot.thread.start()

    def wait_ready(self, max_wait: float | None = None) -> bool:
        """Block until every worker is warm; ``False`` if ``max_wait`` seconds pass first."""
        self.start()
        deadline = None if max_wait is None else time.monotonic() + max_wait
        with self._cv:
            while not all(s.ready for s in self._slots) and self._broken is None and not self._closed:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    return False
                self._cv.wait(remaining)
            if self._broken is not None:
                raise ScoringError(self._broken)
            return not self._closed

    async def wait_ready_async(self, max_wait: float | None = None) -> bool:
        return await asyncio.to_thread(self.wait_ready, max_wait)

    @property
    def started(self) -> bool:
        return self._started

    @property
    def closed(self) -> bool:
        return self._closed

    def worker_pids(self) -> list[int]:
        return [s.proc.pid for s in self._slots if s.proc is not None and s.proc.poll() is None]

    def close(self, wait: bool = True) -> None:
        """Stop the workers; pending verifications fail with ``ScoringError``. Idempotent."""
        with self._cv:
            if self._closed:
                return
            self._closed = True
            pending = self._drain_pending()
            busy = [s for s in self._slots if s.busy]
        for t in pending:
            self._fail(t, ScoringError(_CLOSED))
        # Idle workers are told to quit by their threads; busy ones are interrupted.
        for slot in busy if wait else self._slots:
            proc = slot.proc
            if proc is not None and proc.poll() is None:
                proc.kill()
        if wait:
            for slot in self._slots:
                if slot.thread is not None and slot.thread is not threading.current_thread():
                    slot.thread.join(timeout=10)
            for slot in self._slots:
                self._stop_worker(slot, graceful=True)
        _LIVE_POOLS.discard(self)

    def __enter__(self) -> MathVerifyPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- submitting --------------------------------------------------------------------------------
    def submit(self, gold: str, pred: str, *, item_timeout: float | None = None) -> cf.Future[VerifyOutcome]:
        """Verify ``pred`` against ``gold`` (raw answer strings, boxed by the worker) within
        ``item_timeout`` seconds of worker time (default: the pool's ``timeout``)."""
        fut: cf.Future[VerifyOutcome] = cf.Future()
        quick = quick_verdict(gold, pred)
        with self._cv:
            self.stats.submitted += 1
            if quick is not None:
                self.stats.fast += 1
                fut.set_result(VerifyOutcome(quick, "ok", "fast"))
                return fut
            key = (gold, pred)
            hit = self._cache.get(key)
            if hit is not None:
                self._cache.move_to_end(key)
                self.stats.cached += 1
                fut.set_result(VerifyOutcome(hit.correct, hit.status, "cache", 0.0))
                return fut
            if self._broken is not None or self._closed:
                fut.set_exception(ScoringError(self._broken or "this MathVerifyPool was closed"))
                return fut
            task = self._inflight.get(key)
            if task is not None:
                self.stats.deduplicated += 1
                task.waiters.append(fut)
                return fut
            task = _Task(gold, pred, self.timeout if item_timeout is None else float(item_timeout), [fut])
            self._inflight[key] = task
            self._enqueue(task)
        if not self._started:
            self.start()
        return fut

    async def verify(self, gold: str, pred: str, *, item_timeout: float | None = None) -> VerifyOutcome:
        fut = self.submit(gold, pred, item_timeout=item_timeout)
        if fut.done():  # fast path and cache hits: no thread hop
            return fut.result()
        return await asyncio.wrap_future(fut)

    def verify_many(
        self, pairs: list[tuple[str, str]], *, item_timeout: float | None = None
    ) -> list[VerifyOutcome]:
        """Synchronous bulk verification (results in input order)."""
        futs = [self.submit(g, p, item_timeout=item_timeout) for g, p in pairs]
        return [f.result() for f in futs]

    # --- internals: queue --------------------------------------------------------------------------
    def _enqueue(self, task: _Task, front: bool = False) -> None:
        # caller holds self._cv
        dq = self._pending.get(task.gold)
        if dq is None:
            dq = self._pending[task.gold] = deque()
        if front:
            dq.appendleft(task)
            self._pending.move_to_end(task.gold, last=False)
        else:
            dq.append(task)
        self._pending_count += 1
        self._cv.notify_all()  # not notify(): a wait_ready() caller could swallow the wake-up

    def _drain_pending(self) -> list[_Task]:
        # caller holds self._cv: empty the queue (its tasks are the caller's to fail) and wake everyone
        pending = [t for dq in self._pending.values() for t in dq]
        self._pending.clear()
        self._pending_count = 0
        self._cv.notify_all()
        return pending

    def _requeue(self, tasks: list[_Task]) -> None:
        with self._cv:
            if self._closed:
                for t in tasks:
                    self._fail(t, ScoringError(_CLOSED))
                return
            for t in reversed(tasks):
                self._enqueue(t, front=True)

    def _choose_gold(self, slot: _Slot) -> str:
        # 0. work that has waited too long, whatever it costs to parse; 1. a gold this worker already
        # parsed; 2. one no other ready worker has; 3. the oldest.
        oldest = next(iter(self._pending))
        if time.monotonic() - self._pending[oldest][0].queued_at > _MAX_AFFINITY_WAIT:
            return oldest
        for gold in self._pending:
            if gold in slot.golds:
                return gold
        others = [s.golds for s in self._slots if s is not slot and s.ready]
        for gold in self._pending:
            if not any(gold in g for g in others):
                return gold
        return oldest

    def _take(self, slot: _Slot) -> list[_Task] | None:
        with self._cv:
            while True:
                if self._closed:
                    return None
                if self._pending_count:
                    break
                self._cv.wait()
            gold = self._choose_gold(slot)
            dq = self._pending[gold]
            ready = sum(1 for s in self._slots if s.ready) or 1
            # Take a batch of this gold, but leave a fair share for idle workers.
            n = max(1, min(self.batch_size, len(dq), math.ceil(self._pending_count / ready)))
            batch = [dq.popleft() for _ in range(n)]
            if not dq:
                del self._pending[gold]
            self._pending_count -= n
            slot.golds[gold] = None
            slot.golds.move_to_end(gold)
            while len(slot.golds) > self.parse_cache_size:
                slot.golds.popitem(last=False)
            live: list[_Task] = []
            for t in batch:  # `wanted` read once per task: waiters may be cancelled meanwhile
                if t.wanted:
                    live.append(t)
                else:  # every waiter was cancelled: forget the task
                    self._inflight.pop((t.gold, t.pred), None)
            return live

    # --- internals: results ------------------------------------------------------------------------
    def _resolve(self, task: _Task, outcome: VerifyOutcome) -> None:
        with self._cv:
            key = (task.gold, task.pred)
            self._inflight.pop(key, None)
            if outcome.status in ("ok", "timeout"):  # a timeout is as repeatable as a verdict
                self._cache[key] = outcome
                if len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
            self.stats.verified += 1
            if outcome.status == "timeout":
                self.stats.timeouts += 1
            elif outcome.status == "crashed":
                self.stats.crashes += 1
            waiters = list(task.waiters)
        for w in waiters:
            if not w.done():
                try:
                    w.set_result(outcome)
                except cf.InvalidStateError:  # cancelled meanwhile
                    pass

    def _fail(self, task: _Task, exc: BaseException) -> None:
        with self._cv:
            self._inflight.pop((task.gold, task.pred), None)
            waiters = list(task.waiters)
        for w in waiters:
            if not w.done():
                try:
                    w.set_exception(exc)
                except cf.InvalidStateError:
                    pass

    # --- internals: workers ------------------------------------------------------------------------
    def _spawn(self, slot: _Slot) -> None:
        r_in, w_in = os.pipe()  # parent -> worker
        r_out, w_out = os.pipe()  # worker -> parent
        try:
            args = [str(r_in), str(w_out), str(self.parse_cache_size), str(self.parse_cache_size * 2)]
            args.append(str(self.memory_limit_mb))
            proc = subprocess.Popen(
                [sys.executable, str(_WORKER), *args],
                pass_fds=(r_in, w_out),
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # Ctrl-C and job-control signals are the parent's business
            )
        except BaseException:
            for fd in (r_in, w_in, r_out, w_out):
                os.close(fd)
            raise
        os.close(r_in)
        os.close(w_out)
        recv = Connection(r_out, writable=False)
        with slot.lock:
            slot.proc = proc
            slot.send = Connection(w_in, readable=False)
            slot.recv = recv
        with self._cv:
            self.stats.spawns += 1
        if not recv.poll(self.startup_timeout):
            raise ScoringError(f"a math-verify worker did not start within {self.startup_timeout:g}s")
        msg = recv.recv()
        if msg[0] != "ready":
            raise ScoringError(f"a math-verify worker failed to start: {msg[1]}")
        with self._cv:
            slot.ready = True
            self._cv.notify_all()

    def _stop_worker(self, slot: _Slot, graceful: bool = False) -> None:
        with slot.lock:
            proc, send, recv = slot.proc, slot.send, slot.recv
            slot.proc = slot.send = slot.recv = None
            with self._cv:
                slot.ready = False
                slot.golds.clear()
        if send is not None:
            if graceful and proc is not None and proc.poll() is None:
                try:
                    send.send(("quit",))
                except OSError:
                    pass
            send.close()
        if recv is not None:
            recv.close()
        if proc is not None:
            if graceful:
                try:
                    proc.wait(timeout=1)
                except subprocess.TimeoutExpired:
                    pass
            if proc.poll() is None:
                proc.kill()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:  # pragma: no cover - a SIGKILLed process always exits
                pass

    def _slot_loop(self, slot: _Slot) -> None:
        failures = 0
        while not self._closed:
            if slot.proc is None:
                try:
                    self._spawn(slot)
                    failures = 0
                except Exception as exc:
                    self._stop_worker(slot)
                    failures += 1
                    if failures < 3 and not self._closed:
                        time.sleep(0.2 * failures)
                        continue
                    with self._cv:
                        others_alive = any(s.ready for s in self._slots if s is not slot)
                    if not others_alive:
                        self._break(f"math-verify workers cannot start: {exc}")
                    return
            batch = self._take(slot)
            if batch is None:
                break
            if batch:
                slot.busy = True
                try:
                    self._run_batch(slot, batch)
                finally:
                    slot.busy = False
        self._stop_worker(slot, graceful=True)

    def _break(self, reason: str) -> None:
        with self._cv:
            if self._broken is None:
                self._broken = reason
            pending = self._drain_pending()
        for t in pending:
            self._fail(t, ScoringError(reason))

    def _run_batch(self, slot: _Slot, batch: list[_Task]) -> None:
        send, recv = slot.send, slot.recv
        assert send is not None and recv is not None
        try:
            send.send(("batch", [(t.gold, t.pred) for t in batch]))
        except OSError:
            self._stop_worker(slot)
            self._requeue(batch)
            return
        with self._cv:
            self.stats.dispatched += len(batch)
        for i, task in enumerate(batch):
            # The item's clock starts when the worker is free to start it: now.
            deadline = time.monotonic() + task.timeout
            msg: tuple[bool, VerifyStatus, float, bool] | None = None
            crashed = False
            while msg is None and not crashed:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                try:
                    if recv.poll(remaining):
                        msg = recv.recv()
                except (EOFError, OSError):
                    crashed = True
            if msg is not None:
                verdict, status, seconds, gold_parsed = msg
                if gold_parsed:
                    with self._cv:
                        self.stats.gold_parses += 1
                self._resolve(task, VerifyOutcome(bool(verdict), status, "worker", seconds))
                continue
            self._stop_worker(slot)
            rest = batch[i + 1 :]
            if self._closed:
                for t in (task, *rest):
                    self._fail(t, ScoringError(_CLOSED))
                return
            if crashed:
                self._resolve(task, VerifyOutcome(False, "crashed", "worker", 0.0))
            else:
                with self._cv:
                    self.stats.kills += 1
                self._resolve(task, VerifyOutcome(False, "timeout", "worker", task.timeout, killed=True))
            if rest:
                self._requeue(rest)
            return
