"""What both transports (HTTP and the reference ZMQ protocol) serve: one loaded environment's identity and
dataset, and its rollouts through the worker pool.

The server process loads the environment too, for ``/info`` and ``/dataset`` and to make the error rows
of groups that could not run; rollouts only ever run in the workers.
"""

from __future__ import annotations

import asyncio
import itertools
import math
from collections.abc import AsyncGenerator, Sequence
from typing import Any

from verifiers.envs import EnvGroup, Environment, load_environment
from verifiers.serve.policy import ClientPolicy
from verifiers.serve.pool import WorkerPool
from verifiers.serve.runner import ClientSpec, GroupJob
from verifiers.serve.wire import DatasetPage, RolloutsRequest, ServerInfo, Split
from verifiers.types import Row

MAX_PAGE = 100_000


class RequestError(ValueError):
    """A request that names rows the environment does not have, or asks for something impossible."""


def requires_group_scoring(env: Environment) -> bool:
    if isinstance(env, EnvGroup):
        return any(requires_group_scoring(e) for e in env.envs.values())
    return bool(getattr(env.rubric, "has_group_funcs", False))


class EnvService:
    def __init__(
        self,
        env_id: str,
        env_args: dict[str, Any] | None = None,
        *,
        workers: int = 1,
        max_concurrent: int = 256,
        heartbeat_timeout: float = 60.0,
        max_seq_len: int | None = None,
        score_rollouts: bool = True,
        policy: ClientPolicy | None = None,
    ) -> None:
        #: The key variables and endpoints requests may use (``verifiers.serve.policy``), fixed at start.
        self.policy = policy or ClientPolicy()
        self.env: Environment = load_environment(env_id, **(env_args or {}))
        self.env_args = dict(env_args or {})
        self.max_concurrent = max_concurrent
        #: The token budget of rollouts that do not name one (every rollout of the reference protocol).
        self.max_seq_len = max_seq_len
        #: Whether reference-protocol rollouts are scored (the reference's ``score_rollouts``).
        self.score_rollouts = score_rollouts
        self.pool = WorkerPool(
            env_id,
            self.env_args,
            failed_group=self.failed_group,
            workers=workers,
            max_concurrent=max_concurrent,
            heartbeat_timeout=heartbeat_timeout,
        )

    async def start(self) -> None:
        await self.pool.start()

    async def close(self) -> None:
        await self.pool.close()

    # --- identity and data -------------------------------------------------------------------------
    def _split_size(self, split: Split) -> int:
        return len(self.env.rows(split))  # a split the environment lacks falls back to the other

    def info(self) -> ServerInfo:
        return ServerInfo(
            env_id=self.env.env_id,
            env_version=self.env.env_version,
            env_content_hash=self.env.env_content_hash,
            env_args=self.env_args,
            dataset_sizes={"train": self._split_size("train"), "eval": self._split_size("eval")},
            requires_group_scoring=requires_group_scoring(self.env),
            workers=self.pool.num_workers,
            max_concurrent=self.max_concurrent,
            max_seq_len=self.max_seq_len,
            score_rollouts=self.score_rollouts,
            worker_pids=[w.proc.pid for w in self.pool.workers.values() if w.proc.returncode is None],
            in_flight_groups=self.pool.in_flight,
            worker_restarts=self.pool.restarts,
        )

    def row(self, split: Split, example_id: int) -> Row:
        rows = self.env.rows(split)
        if not 0 <= example_id < len(rows):
            raise RequestError(f"example_id {example_id} is not in split {split!r} (0..{len(rows) - 1})")
        return self.env.format_row(rows[example_id], example_id)

    def dataset(self, split: Split, offset: int = 0, limit: int = 100) -> DatasetPage:
        if offset < 0 or limit < 0:
            raise RequestError("offset and limit must be >= 0")
        rows = self.env.rows(split)
        end = min(len(rows), offset + min(limit, MAX_PAGE))
        page = [self.env.format_row(rows[i], i) for i in range(offset, end)]
        return DatasetPage(split=split, total=len(rows), offset=offset, rows=page)

    # --- rollouts ----------------------------------------------------------------------------------
    def failed_group(self, job: GroupJob, error: dict[str, Any]) -> list[dict[str, Any]]:
        out = []
        for i in job["indices"]:
            state = self.env.init_state(job["row"], i)
            state["error"] = dict(error)
            state["stop_condition"] = "error"
            out.append(self.env.result_record(state))
        return out

    def jobs(self, req: RolloutsRequest) -> list[GroupJob]:
        self.policy.check(req.base_url, req.api_key_var)  # ClientNotAllowed before any work
        if req.rows is not None:
            rows = [self.env.format_row(r, int(r.get("example_id", i))) for i, r in enumerate(req.rows)]
        else:
            rows = [self.row(req.split, i) for i in req.example_ids or []]
        client: ClientSpec = {
            "base_url": req.base_url,
            "api_key_var": req.api_key_var,
            "timeout": req.timeout,
            "max_retries": req.max_retries,
        }
        return [
            GroupJob(
                row=row,
                indices=list(range(req.rollouts_per_example)),
                model=req.model,
                client=client,
                sampling_args=dict(req.sampling_args),
                score="group",
                max_seq_len=req.max_seq_len if req.max_seq_len is not None else self.max_seq_len,
                return_tokens=req.return_tokens,
                encoding="json",
            )
            for row in rows
        ]

    async def stream_groups(self, jobs: Sequence[GroupJob]) -> AsyncGenerator[dict[str, Any], None]:
        """Run the jobs, yielding each group's ``{"parts", "meta", "job"}`` as it finishes.

        At most a window of groups is handed to the pool at once (as the run engine does), so a request
        for a million examples does not queue a million jobs; closing the iterator cancels the rest."""
        per_group = max((len(j["indices"]) for j in jobs), default=1)
        # Enough groups queued in the workers that a slot never waits on this process to refill.
        window = 4 * math.ceil(self.max_concurrent / per_group) + self.pool.num_workers
        pending: set[asyncio.Task[dict[str, Any]]] = set()
        queue = iter(jobs)

        async def one(job: GroupJob) -> dict[str, Any]:
            return {**(await self.pool.run_group(job)), "job": job}

        try:
            for job in list(itertools.islice(queue, window)):
                pending.add(asyncio.create_task(one(job)))
            while pending:
                done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    nxt = next(queue, None)
                    if nxt is not None:
                        pending.add(asyncio.create_task(one(nxt)))
                    yield t.result()
        finally:
            for t in pending:
                t.cancel()
            if pending:
                await asyncio.gather(*pending, return_exceptions=True)


__all__ = ["EnvService", "RequestError", "requires_group_scoring"]
