"""Runs one group job (one example × its rollouts) on a loaded environment through the run engine.

A job is the plain dict the worker pool sends (``GroupJob``); the runner keeps one model ``Client`` per
endpoint setting and one rollout cap shared by every job of its process, so ``--max-concurrent`` bounds
rollouts across all requests, not per request (the engine's own cap is per ``schedule`` call).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from typing import Any, Literal, TypedDict

from verifiers.clients import Client
from verifiers.clients.client import MaxTokensField
from verifiers.clients.sampling import merge_sampling_args, token_request_args
from verifiers.envs import Environment
from verifiers.eval.engine import GroupPlan, RolloutEnv, schedule
from verifiers.eval.results import dumps_json, to_json_value
from verifiers.serve.reference_output import to_reference_output
from verifiers.types import ReturnTokens, Row, SamplingArgs, State


class ClientSpec(TypedDict, total=False):
    base_url: str | list[str]
    api_key_var: str | None
    timeout: float | None
    max_retries: int
    headers: dict[str, str]
    #: Per-request headers from the rollout state (``verifiers.clients.Client``'s option of that name).
    headers_from_state: dict[str, str]
    #: Continue multi-turn chats from token ids (``/chat/completions/tokens``).
    token_prompts: bool
    max_tokens_field: MaxTokensField


#: How a job's rollouts travel back: our rows as JSON (the HTTP API), or the reference SDK's
#: ``RolloutOutput`` as msgpack (the reference ZMQ protocol). The worker encodes each rollout once, so the
#: server process only forwards bytes.
Encoding = Literal["json", "reference"]


class GroupJob(TypedDict, total=False):
    id: str
    #: One row per planned rollout group; ``indices`` are the rollout indices of the group.
    row: Row
    indices: list[int]
    model: str
    client: ClientSpec
    sampling_args: dict[str, Any]
    #: ``"none"``: rollouts come back unscored (the reference's ``score_rollouts = False``: a trainer that
    #: scores groups itself).
    score: Literal["group", "rollout", "none"]
    max_seq_len: int | None
    return_tokens: ReturnTokens
    encoding: Encoding
    #: Reference encoding only: the state columns the client asked for.
    state_columns: list[str]


class EncodedGroup(TypedDict):
    """A finished group: one encoded rollout per part, and per part ``[example_id, rollout_index,
    error category or None, scored]`` so the server can order and count without decoding."""

    parts: list[bytes]
    meta: list[list[Any]]


def encode_group(
    records: Sequence[dict[str, Any]], job: GroupJob, sampling_args: SamplingArgs
) -> EncodedGroup:
    if job.get("encoding", "json") == "reference":
        import msgpack

        def pack(r: dict[str, Any]) -> bytes:
            out = to_reference_output(
                r, model=job["model"], sampling_args=sampling_args, state_columns=job.get("state_columns")
            )
            try:
                return bytes(msgpack.packb(out, use_bin_type=True))
            except (TypeError, ValueError, OverflowError):  # a value only the results-file rule can write
                return bytes(msgpack.packb(to_json_value(out), use_bin_type=True))

        parts = [pack(r) for r in records]
    else:
        parts = [dumps_json(r) for r in records]
    meta = [
        [
            r["example_id"],
            r["rollout_index"],
            (r.get("error") or {}).get("category") if r.get("error") is not None else None,
            r.get("error") is None and r.get("reward") is not None,
        ]
        for r in records
    ]
    return {"parts": parts, "meta": meta}


class _Delegating:
    """``RolloutEnv`` that hands every call to ``inner``; the wrappers below change one part."""

    def __init__(self, inner: RolloutEnv) -> None:
        self._inner = inner

    async def rollout(
        self,
        client: Client,
        model: str,
        row: Row,
        *,
        sampling_args: SamplingArgs | None = None,
        rollout_index: int = 0,
        endpoint: int | None = None,
    ) -> State:
        return await self._inner.rollout(
            client, model, row, sampling_args=sampling_args, rollout_index=rollout_index, endpoint=endpoint
        )

    async def score_group(self, states: Sequence[State]) -> None:
        await self._inner.score_group(states)

    async def score_rollout(self, state: State) -> None:
        await self._inner.score_rollout(state)

    async def setup(self) -> None:
        await self._inner.setup()

    async def teardown(self) -> None:
        await self._inner.teardown()

    def init_state(self, row: Row, rollout_index: int) -> State:
        return self._inner.init_state(row, rollout_index)

    def request_sampling_args(self, run_args: SamplingArgs | None, row: Row | None = None) -> SamplingArgs:
        return self._inner.request_sampling_args(run_args, row)


class _Bounded(_Delegating):
    """An environment whose ``rollout`` waits for a process-wide slot."""

    def __init__(self, env: RolloutEnv, slots: asyncio.Semaphore) -> None:
        super().__init__(env)
        self._slots = slots

    async def rollout(
        self,
        client: Client,
        model: str,
        row: Row,
        *,
        sampling_args: SamplingArgs | None = None,
        rollout_index: int = 0,
        endpoint: int | None = None,
    ) -> State:
        async with self._slots:
            return await super().rollout(
                client,
                model,
                row,
                sampling_args=sampling_args,
                rollout_index=rollout_index,
                endpoint=endpoint,
            )


class _Unscored(_Delegating):
    """The same rollouts, left unscored (``score = "none"``)."""

    async def score_group(self, states: Sequence[State]) -> None:
        return None

    async def score_rollout(self, state: State) -> None:
        return None


def job_sampling_args(job: GroupJob) -> SamplingArgs:
    """The run-level sampling layer of a job: the token request (lowest) under the caller's arguments."""
    return merge_sampling_args(token_request_args(job.get("return_tokens", "none")), job.get("sampling_args"))


class GroupRunner:
    """Runs jobs on ``env``. ``max_seq_len`` is a property of an environment, so a job asking for another
    value than the environment's runs on a copy made by ``load`` (kept, one per value: a trainer uses one
    value, so in practice one copy) rather than changing the environment under other requests' feet."""

    #: At most this many environment copies for distinct ``max_seq_len`` values.
    MAX_COPIES = 4

    def __init__(
        self, env: Environment, max_concurrent: int, load: Callable[[], Environment] | None = None
    ) -> None:
        self.env = env
        self.max_concurrent = max(1, max_concurrent)
        self._slots = asyncio.Semaphore(self.max_concurrent)
        self._load = load
        self._envs: dict[int | None, RolloutEnv] = {env.max_seq_len: _Bounded(env, self._slots)}
        self._copies: list[Environment] = []
        self._clients: dict[str, Client] = {}

    async def _env_for(self, max_seq_len: int | None) -> RolloutEnv:
        if max_seq_len is None:
            return self._envs[self.env.max_seq_len]
        found = self._envs.get(max_seq_len)
        if found is not None:
            return found
        if self._load is None or len(self._copies) >= self.MAX_COPIES:
            raise ValueError(
                f"this env server cannot run max_seq_len={max_seq_len}: it already serves "
                f"{sorted(k for k in self._envs if k is not None)}"
            )
        copy = self._load()
        copy.max_seq_len = max_seq_len
        await copy.setup()
        self._copies.append(copy)
        bounded = self._envs[max_seq_len] = _Bounded(copy, self._slots)
        return bounded

    def _client(self, spec: ClientSpec) -> Client:
        key = repr(sorted(spec.items()))
        client = self._clients.get(key)
        if client is None:
            var = spec.get("api_key_var")
            client = Client(
                spec["base_url"],
                os.environ.get(var) if var else None,
                timeout=spec.get("timeout"),
                max_retries=spec.get("max_retries", 3),
                headers=spec.get("headers") or None,
                headers_from_state=spec.get("headers_from_state") or None,
                token_prompts=bool(spec.get("token_prompts")),
                max_tokens_field=spec.get("max_tokens_field", "max_tokens"),
            )
            self._clients[key] = client
        return client

    async def run(self, job: GroupJob) -> EncodedGroup:
        """Roll out and score the job's group, encoded as the job asks."""
        row = job["row"]
        run_args = job_sampling_args(job)
        env = await self._env_for(job.get("max_seq_len"))
        score = job.get("score", "group")
        states = await schedule(
            _Unscored(env) if score == "none" else env,
            [GroupPlan(row, list(job["indices"]))],
            self._client(job["client"]),
            job["model"],
            max_concurrent=self.max_concurrent,
            sampling_args=run_args,
            score="rollout" if score == "none" else score,
        )
        sent = self.env.request_sampling_args(run_args, row)
        return encode_group([self.env.result_record(s) for s in states[0]], job, sent)

    async def aclose(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        for c in clients:
            await c.aclose()
        copies, self._copies = self._copies, []
        for env in copies:
            await env.teardown()


__all__ = [
    "ClientSpec",
    "EncodedGroup",
    "Encoding",
    "GroupJob",
    "GroupRunner",
    "encode_group",
    "job_sampling_args",
]
