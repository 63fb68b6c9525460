"""The engine's Ray backend: groups of rollouts run on Ray actors across a cluster; the driver keeps
the plan, the run directory and the single writer.

One actor per node (``RayOptions.actors_per_node`` for more), pinned to its node. Each actor loads the
environment once by id (``RayOptions.loader``, a ``"module:function"`` name imported in the actor's
process, so this layer never imports the environments), makes its own client (its own connection pool)
and calls ``env.setup()`` (its own sandbox pool). The driver hands each group to the actor with the
fewest rollouts in flight and gets the group's finished records back, which the caller writes.

Guarantees, the same as the local engine's:

- ``max_concurrent`` counts rollouts across the cluster: a group is dispatched only when the driver's
  cap (fixed or adaptive, ``verifiers.eval.concurrency``) has a slot for each of its rollouts;
- a group is recorded only when its actor returns it, so an actor (or node) that dies loses its
  in-flight groups, which are dispatched again to the actors left: recorded at most once, and once;
- cancellation cancels the in-flight calls and kills the actors; groups already returned stay written;
- an error inside a rollout keeps its category (it is part of the record); a failure of an actor
  itself (the environment does not load there, a bug in a callback) stops the run, loudly.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import itertools
import math
import os
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from verifiers._extras import install_command
from verifiers.clients import Client
from verifiers.errors import InfraError
from verifiers.eval._gc import run_gc
from verifiers.eval.concurrency import AdaptiveLimit, FixedLimit, Limit
from verifiers.eval.config import ENV_SETTINGS, RAY_LOCAL as LOCAL  # the address that starts Ray here
from verifiers.eval.engine import GroupPlan, GroupRunner, RunProgress, ScoreMode
from verifiers.types import Row, SamplingArgs, State

#: The default environment loader, named (not imported) so the engine stays below the environments.
DEFAULT_LOADER = "verifiers.envs.loading:load_environment"
#: The actors' own cap (the driver's is the real one).
UNBOUNDED = 1 << 30
#: Records of a finished group, as ``env.result_record`` made them.
RecordsCallback = Callable[[list[dict[str, Any]]], None]


#: Seconds to wait for a cluster to answer before the run fails with ``RayUnavailableError`` (Ray's own
#: client retries an unreachable address for minutes, and ``ray.init`` cannot be interrupted).
CONNECT_TIMEOUT = 60.0
#: Seconds between checks, while actors start, that their nodes still live.
NODE_RECHECK_S = 5.0
#: Seconds a head node's port gets to accept a TCP connection (the quick "nobody there" check).
PROBE_TIMEOUT = 5.0


class RayUnavailableError(InfraError, RuntimeError):
    """Ray is not installed (``pip install 'verifiers-sdk[ray]'``) or the cluster cannot be reached."""


class WorkerLostError(InfraError, RuntimeError):
    """Every actor of the run died: nothing is left to run the remaining groups (resume the run when
    the cluster is back)."""


@dataclass(frozen=True)
class RayOptions:
    """Where and how a run uses Ray.

    ``address``: ``"local"`` starts a Ray instance here for the run (stopped after it); ``"auto"`` joins
    the cluster this machine belongs to; ``"ray://host:10001"`` connects through Ray Client; a
    ``host:port`` joins that head node."""

    address: str = LOCAL
    actors_per_node: int = 1
    #: CPUs each actor reserves (0: actors fit beside anything; nodes are chosen explicitly).
    num_cpus: float = 0.0
    loader: str = DEFAULT_LOADER
    #: Ray's ``runtime_env`` for the run's job (e.g. ``{"pip": [...]}`` to ship an environment package).
    runtime_env: dict[str, Any] | None = None
    #: Seconds the cluster gets to answer (``RayUnavailableError`` after that).
    connect_timeout: float = CONNECT_TIMEOUT


def ray_options(value: RayOptions | str | bool | None) -> RayOptions | None:
    """What callers pass as ``ray=``: ``None``/``False`` (no Ray), ``True`` (a local instance), an
    address, or ``RayOptions``."""
    if value is None or value is False:
        return None
    if value is True:
        return RayOptions()
    if isinstance(value, RayOptions):
        return value
    return RayOptions(address=str(value).strip() or LOCAL)


@dataclass
class RayReport:
    """What a distributed run did, for ``metadata.json`` (``extra["ray"]``)."""

    address: str
    actors: int = 0
    #: Groups recorded per node id (every node that ran groups appears).
    groups_by_node: Counter[str] = field(default_factory=Counter)
    #: Groups dispatched again because their actor died.
    requeued: int = 0
    actors_lost: int = 0

    def summary(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "actors": self.actors,
            "nodes": len(self.groups_by_node),
            "groups_by_node": dict(sorted(self.groups_by_node.items())),
            "requeued_groups": self.requeued,
            "actors_lost": self.actors_lost,
        }


def _import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RayUnavailableError(
            f"distributed evaluation needs the [ray] extra: {install_command('ray')}"
        ) from None
    return ray


def resolve_loader(name: str) -> Callable[..., Any]:
    """``"module:function"`` as the function (imported here, i.e. in the actor's process)."""
    module, _, attr = name.partition(":")
    if not module or not attr:
        raise ValueError(f"loader must be 'module:function', not {name!r}")
    fn = getattr(importlib.import_module(module), attr)
    if not callable(fn):
        raise TypeError(f"{name} is not callable")
    return fn  # type: ignore[no-any-return]


def _env_settings(env: Any) -> dict[str, Any]:
    return {name: getattr(env, name) for name in ENV_SETTINGS if getattr(env, name, None) is not None}


class GroupWorker:
    """The actor: one environment, one client, groups run with the local engine."""

    def __init__(
        self,
        loader: str,
        env_id: str,
        env_args: dict[str, Any],
        client_spec: tuple[list[Any], dict[str, Any]],
        model: str,
        sampling_args: SamplingArgs | None,
        score: ScoreMode,
        max_tokens_limit: int | None,
        env_settings: dict[str, Any],
    ) -> None:
        self.loader, self.env_id, self.env_args = loader, env_id, env_args
        self.client_spec = client_spec
        self.model, self.sampling_args, self.score = model, sampling_args, score
        self.max_tokens_limit, self.env_settings = max_tokens_limit, env_settings
        self.env: Any = None
        self.client: Client | None = None
        self.runner: GroupRunner | None = None
        self._gc = contextlib.ExitStack()
        self.node_id = ""

    async def start(self) -> dict[str, Any]:
        ray = _import_ray()
        self.node_id = str(ray.get_runtime_context().get_node_id())
        self.env = resolve_loader(self.loader)(self.env_id, **self.env_args)
        for name, value in self.env_settings.items():  # what the driver set on its own copy
            setattr(self.env, name, value)
        endpoints, options = self.client_spec
        self.client = Client(endpoints, **options)
        await self.env.setup()
        self._gc.enter_context(run_gc())  # the actor's whole life is a run
        # The driver caps rollouts in flight across the cluster: groups run here unthrottled.
        self.runner = self._runner(UNBOUNDED)
        return {
            "node_id": self.node_id,
            "env_version": getattr(self.env, "env_version", ""),
            "env_content_hash": getattr(self.env, "env_content_hash", ""),
        }

    def _runner(self, cap: int) -> GroupRunner:
        assert self.client is not None, "start() first"
        return GroupRunner(
            self.env,
            self.client,
            self.model,
            limit=FixedLimit(cap),
            sampling_args=self.sampling_args,
            score=self.score,
            on_group=None,
            progress=RunProgress(),
            max_tokens_limit=self.max_tokens_limit,
        )

    async def run_group(self, row: Row, indices: list[int], slots: int) -> dict[str, Any]:
        assert self.client is not None and self.runner is not None, "start() first"
        before = self.client.stats.throttled
        # A group larger than the whole cap: its rollouts take turns through a cap of its own.
        runner = self.runner if slots >= len(indices) else self._runner(slots)
        states = await runner.group(GroupPlan(row, indices))
        return {
            "records": [self.env.result_record(s) for s in states],
            "node_id": self.node_id,
            "throttled": self.client.stats.throttled - before,
        }

    async def run_batch(
        self, items: list[tuple[Row, list[int], int]]
    ) -> AsyncIterator[list[tuple[int, dict[str, Any]]]]:
        """Run several groups at once, yielding (position, result) pairs as they finish — every group
        finished since the last yield in one message, so the driver pays one reply per batch of
        results, not per group."""
        finished: asyncio.Queue[tuple[int, asyncio.Task[dict[str, Any]]]] = asyncio.Queue()

        def done(pos: int, task: asyncio.Task[dict[str, Any]]) -> None:
            finished.put_nowait((pos, task))

        tasks = []
        for pos, (row, indices, slots) in enumerate(items):
            task = asyncio.create_task(self.run_group(row, indices, slots))
            task.add_done_callback(functools.partial(done, pos))
            tasks.append(task)
        try:
            left = len(items)
            while left:
                ready = [await finished.get()]
                while not finished.empty():
                    ready.append(finished.get_nowait())
                left -= len(ready)
                yield [(pos, t.result()) for pos, t in ready]
        finally:  # a failed group or a cancelled call: the batch's other groups stop too
            for task in tasks:
                task.cancel()

    async def stop(self) -> None:
        try:
            if self.env is not None:
                await self.env.teardown()
        finally:
            self._gc.close()
            if self.client is not None:
                await self.client.aclose()


def _alive_nodes(ray: Any) -> list[str]:
    return [str(n["NodeID"]) for n in ray.nodes() if n.get("Alive") and n.get("Resources", {}).get("CPU")]


#: Where a running Ray instance records its address, which ``address="auto"`` joins (Ray's convention).
RAY_CURRENT_CLUSTER = "/tmp/ray/ray_current_cluster"


def _head_endpoint(address: str) -> tuple[str, int] | None:
    """``(host, port)`` of the head an address names (``host:port``, ``ray://host:port``, or ``auto``:
    ``$RAY_ADDRESS`` or the address the last Ray instance here recorded); ``None`` for ``local`` and for
    ``auto`` without a recorded address (Ray then says so itself)."""
    if address == LOCAL:
        return None
    if address == "auto":
        recorded = os.environ.get("RAY_ADDRESS") or ""
        if not recorded and os.path.exists(RAY_CURRENT_CLUSTER):
            with open(RAY_CURRENT_CLUSTER, encoding="utf-8") as f:
                recorded = f.read().strip()
        if not recorded or recorded == "auto":
            return None
        address = recorded
    rest = address.removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit():
        return None
    return host.strip("[]") or "127.0.0.1", int(port)


def _probe(address: str) -> None:
    """Fail at once when nothing listens at an explicit address (Ray would retry it for minutes)."""
    endpoint = _head_endpoint(address)
    if endpoint is None:
        return
    try:
        with socket.create_connection(endpoint, timeout=PROBE_TIMEOUT):
            pass
    except OSError as exc:
        raise RayUnavailableError(
            f"cannot reach the Ray cluster at {address}: nothing answers at {endpoint[0]}:{endpoint[1]} ({exc})"
        ) from None


async def _in_thread(fn: Callable[[], Any], seconds: float, what: str) -> Any:
    """``fn()`` in a daemon thread, awaited for at most ``seconds``. Ray's blocking calls cannot
    be interrupted; a daemon thread never keeps the process alive after a timeout, SIGTERM or Ctrl-C
    (``asyncio.to_thread``'s pool threads would: the interpreter joins them at exit)."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, exc: BaseException | None) -> None:
        if not fut.done():
            if exc is not None:
                fut.set_exception(exc)
            else:
                fut.set_result(result)

    def target() -> None:
        try:
            result, exc = fn(), None
        except BaseException as raised:
            result, exc = None, raised
        # After a timeout the caller may have finished and closed its loop: nobody waits for this answer.
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, exc)

    threading.Thread(target=target, name=f"ray-{what}", daemon=True).start()
    try:
        return await asyncio.wait_for(asyncio.shield(fut), seconds)
    except TimeoutError:
        raise RayUnavailableError(f"no answer from the Ray cluster within {seconds:g}s ({what})") from None


def _connect(ray: Any, options: RayOptions) -> bool:
    """Join or start Ray; ``True`` when this call initialised it (and so must shut it down)."""
    if ray.is_initialized():
        return False
    kwargs: dict[str, Any] = {"logging_level": "WARNING", "log_to_driver": False}
    if options.runtime_env is not None:
        kwargs["runtime_env"] = options.runtime_env
    # Ray's own "local": always a new instance (without an address, ray.init joins whatever cluster
    # /tmp/ray/ray_current_cluster names, even a dead one).
    kwargs["address"] = options.address
    if options.address == LOCAL:
        kwargs["include_dashboard"] = False
    try:
        ray.init(**kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailableError(f"cannot reach the Ray cluster at {options.address}: {exc}") from None
    return True


async def schedule_ray(
    env: Any,
    plans: Sequence[GroupPlan],
    client: Client,
    model: str,
    *,
    options: RayOptions,
    limit: Limit,
    sampling_args: SamplingArgs | None,
    score: ScoreMode,
    on_records: RecordsCallback,
    progress: RunProgress,
    max_tokens_limit: int | None = None,
    report: RayReport | None = None,
) -> RayReport:
    """Run every planned group on Ray actors (see the module docstring); ``on_records`` gets each
    finished group's records on the driver's event loop, in completion order. ``report`` (filled as
    the run goes) lets the caller show it while the run is live."""
    ray = _import_ray()
    report = report if report is not None else RayReport(address=options.address)
    progress.total += sum(len(p.rollout_indices) for p in plans)
    progress.limit = limit
    _probe(options.address)
    owns = await _in_thread(
        lambda: _connect(ray, options), options.connect_timeout, f"connecting to {options.address}"
    )
    actors: list[Any] = []
    placed_on: list[str] = []  # each actor's node, in order
    try:
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        nodes = await _in_thread(lambda: _alive_nodes(ray), options.connect_timeout, "list nodes")
        if not nodes:
            raise RayUnavailableError(f"the Ray cluster at {options.address} has no node with CPUs")
        remote_cls = ray.remote(GroupWorker)
        spec = client.portable()
        for node in nodes:
            for _ in range(options.actors_per_node):
                placed_on.append(node)
                actors.append(
                    remote_cls.options(
                        scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
                        num_cpus=options.num_cpus,
                        max_restarts=0,
                        max_concurrency=100_000,
                    ).remote(
                        options.loader,
                        env.env_id,
                        dict(env.env_args),
                        spec,
                        model,
                        sampling_args,
                        score,
                        max_tokens_limit,
                        _env_settings(env),
                    )
                )
        report.actors = len(actors)
        actors, identities = await _start_actors(ray, actors, placed_on, options, report)
        for ident in identities:
            if ident["env_content_hash"] != getattr(env, "env_content_hash", ident["env_content_hash"]):
                raise RuntimeError(
                    f"node {ident['node_id']} has a different {env.env_id} (content hash "
                    f"{ident['env_content_hash'][:12]}, here {env.env_content_hash[:12]}): install the same "
                    "version on every node"
                )
        progress.started = time.monotonic()  # the rate counts from here, not from actor start-up
        with run_gc():
            await _dispatch(ray, actors, plans, limit, on_records, progress, report)
    finally:
        await _stop(ray, actors)
        if owns:
            with contextlib.suppress(RayUnavailableError):
                await _in_thread(ray.shutdown, options.connect_timeout, "shutdown")
    return report


def _actor_lost_errors() -> tuple[type[BaseException], ...]:
    """What Ray raises for a call to an actor that died, or whose node did (``RayActorError``, with
    ``ActorDiedError`` and ``ActorUnavailableError`` under it), or that can never be placed: its groups
    go to the actors left."""
    from ray.exceptions import ActorUnschedulableError, RayActorError

    return (RayActorError, ActorUnschedulableError)


async def _start_actors(
    ray: Any, actors: list[Any], placed_on: list[str], options: RayOptions, report: RayReport
) -> tuple[list[Any], list[dict[str, Any]]]:
    """Start every actor and return the ones that started, with their identities. An actor whose node
    died before it started (a node the cluster still listed as alive when the actors were placed, or one
    that dies while the environment loads) is dropped and counted lost, as one that dies mid-run is: the
    actors left run its groups. Any other failure to start (the environment does not load) stops the run."""
    lost_errors = _actor_lost_errors()

    async def start(actor: Any) -> dict[str, Any]:
        return cast(dict[str, Any], await actor.start.remote())

    pending = {asyncio.ensure_future(start(a)): i for i, a in enumerate(actors)}
    started: dict[int, dict[str, Any]] = {}
    lost: list[str] = []
    try:
        while pending:
            done, _ = await asyncio.wait(pending, timeout=NODE_RECHECK_S)
            for fut in done:
                i = pending.pop(fut)
                try:
                    started[i] = fut.result()
                except lost_errors as exc:
                    lost.append(f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")
            if pending and not done:
                # Hard node affinity to a node that died waits for that node: ask which nodes live.
                alive = set(
                    await _in_thread(lambda: _alive_nodes(ray), options.connect_timeout, "list nodes")
                )
                for fut, i in list(pending.items()):
                    if placed_on[i] not in alive:
                        fut.cancel()
                        del pending[fut]
                        lost.append("its node is no longer alive")
                        with contextlib.suppress(Exception):
                            ray.kill(actors[i])
    finally:
        for fut in pending:
            fut.cancel()
    report.actors_lost += len(lost)
    if not started:
        raise WorkerLostError(
            f"no Ray actor of the run could start on the cluster at {options.address} ({'; '.join(lost)})"
        )
    order = sorted(started)
    return [actors[i] for i in order], [started[i] for i in order]


async def _stop(ray: Any, actors: list[Any]) -> None:
    if not actors:
        return
    try:
        async with asyncio.timeout(10):
            await asyncio.gather(*(a.stop.remote() for a in actors), return_exceptions=True)
    except TimeoutError:
        pass
    finally:
        for a in actors:
            try:
                ray.kill(a)
            except Exception:  # already dead
                pass


async def _dispatch(
    ray: Any,
    actors: list[Any],
    plans: Sequence[GroupPlan],
    limit: Limit,
    on_records: RecordsCallback,
    progress: RunProgress,
    report: RayReport,
) -> None:
    lost_errors = _actor_lost_errors()
    ceiling = limit.ceiling if isinstance(limit, AdaptiveLimit) else limit.limit
    per_group = max(1, max((len(p.rollout_indices) for p in plans), default=1))
    window = asyncio.Semaphore(2 * math.ceil(ceiling / per_group) + 1)
    load = {i: 0 for i in range(len(actors))}  # rollouts in flight per live actor
    retry: deque[GroupPlan] = deque()
    rotation = itertools.count()
    source: Iterator[GroupPlan] = iter(plans)
    tasks: set[asyncio.Task[None]] = set()
    failure: list[BaseException] = []

    # Groups dispatched to an actor within one turn of the event loop go in one call (run_batch), and
    # come back as they finish: one Ray call per burst instead of one per group.
    outbox: dict[int, list[tuple[GroupPlan, int, asyncio.Future[dict[str, Any]]]]] = {}
    streams: set[asyncio.Task[None]] = set()
    loop = asyncio.get_running_loop()

    async def stream(idx: int, items: list[tuple[GroupPlan, int, asyncio.Future[dict[str, Any]]]]) -> None:
        gen = (
            actors[idx]
            .run_batch.options(num_returns="streaming")
            .remote([(plan.row, plan.rollout_indices, slots) for plan, slots, _ in items])
        )
        try:
            async for ref in gen:
                for pos, out in await ref:
                    fut = items[pos][2]
                    if not fut.done():
                        fut.set_result(out)
        except asyncio.CancelledError:
            ray.cancel(gen)
            raise
        except BaseException as exc:  # the actor died or failed: every unfinished group of the batch
            for _, _, fut in items:
                if not fut.done():
                    fut.set_exception(exc)
        for _, _, fut in items:  # never wait forever on a group the stream did not return
            if not fut.done():
                fut.set_exception(RuntimeError("a Ray actor's batch ended without returning every group"))

    def flush() -> None:
        batches = list(outbox.items())
        outbox.clear()
        for idx, items in batches:
            t = loop.create_task(stream(idx, items))
            streams.add(t)
            t.add_done_callback(streams.discard)

    def submit(idx: int, plan: GroupPlan, slots: int) -> asyncio.Future[dict[str, Any]]:
        fut: asyncio.Future[dict[str, Any]] = loop.create_future()
        if not outbox:
            loop.call_soon(flush)
        outbox.setdefault(idx, []).append((plan, slots, fut))
        return fut

    # One group takes its slots at a time: taken slot by slot in turns, waiting groups would each hold part of
    # the cap and wait for the rest (two groups of 2 holding one slot each under -c 4: half the cap idle).
    taking = asyncio.Lock()

    async def run_group(plan: GroupPlan) -> None:
        slots = min(len(plan.rollout_indices), ceiling)
        taken = 0
        idx: int | None = None
        try:
            async with taking:
                for _ in range(slots):
                    await limit.acquire()
                    taken += 1
            if not load:
                raise WorkerLostError(
                    "every Ray actor of the run died; resume the run when the cluster is back"
                )
            # The least-loaded actor; ties go round-robin so idle actors all get work.
            turn = next(rotation)
            idx = min(load, key=lambda i: (load[i], (i - turn) % len(actors)))
            load[idx] += slots
            progress.in_flight += slots
            progress.max_in_flight = max(progress.max_in_flight, progress.in_flight)
            sent_at = time.monotonic()
            try:
                out = await submit(idx, plan, slots)
            except lost_errors:
                if load.pop(idx, None) is not None:
                    report.actors_lost += 1
                report.requeued += 1
                retry.append(plan)  # never recorded: its actor died before returning it
                return
            if out["throttled"]:
                limit.throttled(sent_at)
            records: list[dict[str, Any]] = out["records"]
            report.groups_by_node[out["node_id"]] += 1
            progress.generated += len(records)
            progress.record(cast(list[State], records))  # records carry the same error/reward keys
            on_records(records)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # an actor that failed (not died), or a callback bug: stop loudly
            failure.append(exc)
        finally:
            if idx is not None:
                progress.in_flight -= slots
                if idx in load:
                    load[idx] -= slots
            for _ in range(taken):
                limit.release()
            window.release()

    try:
        while not failure:
            plan = retry.popleft() if retry else next(source, None)
            if plan is None:
                if not tasks:
                    break
                await asyncio.wait(set(tasks), return_when=asyncio.FIRST_COMPLETED)
                continue
            await window.acquire()
            t = asyncio.create_task(run_group(plan))
            tasks.add(t)
            t.add_done_callback(tasks.discard)
    finally:
        pending = [t for t in (*tasks, *streams) if not t.done()]
        for t in pending:
            t.cancel()
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
    if failure:
        raise failure[0]


__all__ = [
    "CONNECT_TIMEOUT",
    "DEFAULT_LOADER",
    "LOCAL",
    "GroupWorker",
    "RayOptions",
    "RayReport",
    "RayUnavailableError",
    "WorkerLostError",
    "ray_options",
    "resolve_loader",
    "schedule_ray",
]
