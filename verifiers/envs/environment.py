"""The abstract ``Environment``: data, prompt shape, rollout protocol, scoring and identity."""

from __future__ import annotations

import copy
import enum
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

from verifiers.clients import Client, ClientLike, owned_client
from verifiers.clients.sampling import merge_sampling_args
from verifiers.data import DatasetBuilder, DatasetLike, Rows, normalize_row
from verifiers.eval.config import EvalConfig, RunSettings, resolve_eval_config
from verifiers.eval.engine import ProgressCallback, RunProgress, ScoreMode, run_generate
from verifiers.eval.launch import run_config
from verifiers.eval.run import EvalRun
from verifiers.eval.sync import run_sync
from verifiers.parsers import Parser
from verifiers.rubrics import Rubric
from verifiers.types import Messages, MessageType, Row, SamplingArgs, State


class Unset(enum.Enum):
    """The type of ``UNSET``: a constructor option not given (``None`` means "no limit" for some)."""

    UNSET = "unset"


UNSET = Unset.UNSET


class Environment(ABC):
    """An evaluation / RL environment.

    Subclasses implement ``rollout``. Everything else — selecting rows, scoring with the rubric, running
    many rollouts concurrently, writing results — is shared.

    Identity (contract 3.1): ``env_id``, ``env_version`` and ``env_content_hash`` are set by
    ``load_environment`` from the installed package; constructing an environment directly leaves
    ``env_id`` as the class name and the version ``0.0.0`` unless given.

    Rollout options for trainers (docs/training.md): ``max_seq_len`` (the token budget of one model call)
    and ``interleaved_thinking`` (send earlier reasoning back, or drop it); both are properties a run may
    set, and setting them on a group sets them on its members.
    """

    message_type: ClassVar[MessageType] = "chat"

    def __init__(
        self,
        *,
        dataset: DatasetLike | DatasetBuilder | None = None,
        eval_dataset: DatasetLike | DatasetBuilder | None = None,
        system_prompt: str | None = None,
        few_shot: Messages | None = None,
        parser: Parser | None = None,
        rubric: Rubric | None = None,
        sampling_args: SamplingArgs | None = None,
        timeout: float | None = None,
        task: str = "default",
        env_id: str | None = None,
        env_version: str | None = None,
        max_seq_len: int | Unset | None = UNSET,
        interleaved_thinking: bool | Unset = UNSET,
    ) -> None:
        if dataset is None and eval_dataset is None:
            raise ValueError(f"{type(self).__name__} needs a dataset or an eval_dataset")
        if timeout is not None and timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        self._max_seq_len: int | None = None
        self._interleaved_thinking = True
        # Only options given here reach sub-environments: a group's defaults must not reset its members'.
        if not isinstance(max_seq_len, Unset):
            self.max_seq_len = max_seq_len
        if not isinstance(interleaved_thinking, Unset):
            self.interleaved_thinking = interleaved_thinking
        self._dataset = Rows(dataset) if dataset is not None else None
        self._eval_dataset = Rows(eval_dataset) if eval_dataset is not None else None
        self.system_prompt = system_prompt
        self.few_shot = list(few_shot) if few_shot else None
        self.parser = parser or (rubric.parser if rubric is not None else Parser())
        self.rubric = rubric or Rubric(parser=self.parser)
        if parser is not None and self.rubric.parser_is_default:
            self.rubric.parser = parser  # reward functions asking for `parser` get the env's
        self.sampling_args: SamplingArgs = merge_sampling_args(sampling_args)
        self.timeout = timeout
        self.task = task
        self.env_id: str = env_id or type(self).__name__
        self.env_version: str = env_version or "0.0.0"
        self.env_content_hash: str = ""
        #: Keyword arguments ``load_environment`` was called with (recorded in run metadata).
        self.env_args: dict[str, Any] = {}
        #: The package's evaluation defaults (``[tool.verifiers.eval]``), set by ``load_environment``.
        self.eval_defaults: dict[str, Any] = {}

    # --- identity ----------------------------------------------------------------------------------
    def set_identity(
        self, env_id: str, env_version: str, content_hash: str, env_args: Mapping[str, Any]
    ) -> None:
        self.env_id, self.env_version, self.env_content_hash = env_id, env_version, content_hash
        self.env_args = dict(env_args)

    def sub_environments(self) -> Sequence[Environment]:
        """Environments this one delegates rollouts to (an ``EnvGroup``'s members; none here)."""
        return ()

    def tool_names(self) -> list[str]:
        """The tools this environment offers the model, by name, its sub-environments' included (none
        here; ``ToolEnv`` has its own). A run with a model that cannot call tools is warned."""
        names: list[str] = []
        for env in self.sub_environments():
            names.extend(n for n in env.tool_names() if n not in names)
        return names

    @property
    def max_seq_len(self) -> int | None:
        """Token budget of one model call's prompt + completion (``None``: none; see
        ``verifiers.trajectory``): a completion past it is cut, and a prompt that no longer fits ends the
        rollout as truncated. Setting it sets it on every sub-environment too."""
        return self._max_seq_len

    @max_seq_len.setter
    def max_seq_len(self, value: int | None) -> None:
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError(f"max_seq_len must be a positive number of tokens or None, not {value!r}")
        self._max_seq_len = value
        for env in self.sub_environments():
            env.max_seq_len = value

    @property
    def interleaved_thinking(self) -> bool:
        """Whether earlier turns' reasoning (``reasoning_content``, ``<think>…</think>`` text) is sent back
        to the model on later turns (``True``, the default) or dropped from the requests (``False``; chat
        environments). The rollout's ``completion`` keeps it either way. Setting it sets it on every
        sub-environment too."""
        return self._interleaved_thinking

    @interleaved_thinking.setter
    def interleaved_thinking(self, value: bool) -> None:
        if not isinstance(value, bool):
            raise TypeError(f"interleaved_thinking must be True or False, not {value!r}")
        if not value and self.message_type != "chat" and not self.sub_environments():
            raise ValueError(
                "interleaved_thinking=False drops reasoning from chat messages: chat environments only"
            )
        self._interleaved_thinking = value
        for env in self.sub_environments():
            if env.message_type == "chat" or value:
                env.interleaved_thinking = value

    # --- data --------------------------------------------------------------------------------------
    def rows(self, split: str = "eval") -> Rows:
        """The eval split (falls back to the training set) or the ``train`` split (falls back to eval)."""
        if split not in ("eval", "train"):
            raise ValueError(f"split must be 'eval' or 'train', not {split!r}")
        first, second = (
            (self._eval_dataset, self._dataset) if split == "eval" else (self._dataset, self._eval_dataset)
        )
        chosen = first or second
        assert chosen is not None
        return chosen

    def format_row(self, raw: Mapping[str, Any], index: int) -> Row:
        return normalize_row(
            raw,
            index,
            system_prompt=self.system_prompt,
            few_shot=self.few_shot,
            message_type=self.message_type,
            default_task=self.task,
        )

    def select_rows(
        self, num_examples: int = -1, *, seed: int | None = None, shuffle: bool = False, split: str = "eval"
    ) -> list[Row]:
        """Normalised rows for a run; deterministic in (num_examples, seed, shuffle, split)."""
        rows = self.rows(split)
        return [self.format_row(rows[i], i) for i in rows.indices(num_examples, seed=seed, shuffle=shuffle)]

    # --- rollouts ----------------------------------------------------------------------------------
    def init_state(self, row: Row, rollout_index: int) -> State:
        prompt = row["prompt"]
        return State(
            example_id=row["example_id"],
            rollout_index=rollout_index,
            task=row.get("task", self.task),
            prompt=copy.deepcopy(prompt) if not isinstance(prompt, str) else prompt,
            completion=[] if self.message_type == "chat" else "",
            answer=row.get("answer", ""),
            info=row.get("info", {}),
            turns=[],
            trajectory=[],
            usage={"prompt_tokens": 0, "completion_tokens": 0},
            timing={"generation": 0.0, "scoring": 0.0, "total": 0.0},
            error=None,
            stop_condition=None,
            is_truncated=False,
            reward=None,
            metrics={},
        )

    @abstractmethod
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
        """Run one rollout to its end. Errors are recorded on the returned state, not raised
        (cancellation excepted)."""

    async def score_group(self, states: Sequence[State]) -> None:
        await self.rubric.score_group(states)

    async def score_rollout(self, state: State) -> None:
        await self.rubric.score_rollout(state)

    async def setup(self) -> None:
        """Called once before a run (start pools, warm caches); starts the rubric's resources too.
        Must be idempotent. Subclasses that override it call ``await super().setup()``."""
        await self.rubric.setup()

    async def teardown(self) -> None:
        """Called once after a run, even when it failed or was cancelled; stops the rubric's resources.
        Subclasses that override it call ``await super().teardown()``."""
        await self.rubric.teardown()

    def result_record(self, state: State) -> dict[str, Any]:
        """The contract-3.3 row of a finished rollout."""
        return {
            "example_id": state["example_id"],
            "rollout_index": state["rollout_index"],
            "task": state["task"],
            "prompt": state["prompt"],
            "completion": state["completion"],
            "answer": state["answer"],
            "info": state["info"],
            "reward": state.get("reward"),
            "metrics": state.get("metrics") or {},
            "error": state.get("error"),
            "stop_condition": state.get("stop_condition"),
            "is_truncated": bool(state.get("is_truncated")),
            "turns": state["turns"],
            "trajectory": state.get("trajectory") or [],
            "usage": state["usage"],
            "timing": state["timing"],
            "env_id": self.env_id,
            "env_version": self.env_version,
        }

    def request_sampling_args(self, run_args: SamplingArgs | None, row: Row | None = None) -> SamplingArgs:
        """What a model request of this environment sends: its ``sampling_args`` under the run's
        (``verifiers.clients.sampling.merge_sampling_args``, the one merge rule). The run engine calls
        this once per group and hands the result to ``rollout`` unchanged."""
        return merge_sampling_args(self.sampling_args, run_args)

    def sampling_families(self, run_args: SamplingArgs | None) -> dict[str, SamplingArgs]:
        """What each request family sends, by name (one family here; one per environment of a group)."""
        return {self.env_id: self.request_sampling_args(run_args)}

    # --- running many rollouts ---------------------------------------------------------------------
    async def a_generate(
        self,
        rows: Sequence[Row],
        client: ClientLike,
        model: str,
        *,
        rollouts_per_example: int = 1,
        max_concurrent: int = 32,
        sampling_args: SamplingArgs | None = None,
        score: ScoreMode = "group",
    ) -> list[State]:
        """Roll out and score every row ``rollouts_per_example`` times; states come back in
        (row, rollout_index) order. Nothing is written to disk (that is ``evaluate``). ``client`` is a
        ``Client``, a base URL or an ``openai.AsyncOpenAI`` (see ``verifiers.clients.as_client``)."""
        async with owned_client(client) as client_obj:
            return await run_generate(
                self,
                rows,
                client_obj,
                model,
                rollouts_per_example=rollouts_per_example,
                max_concurrent=max_concurrent,
                sampling_args=sampling_args,
                score=score,
            )

    def generate(
        self,
        rows: Sequence[Row],
        client: ClientLike,
        model: str,
        *,
        rollouts_per_example: int = 1,
        max_concurrent: int = 32,
        sampling_args: SamplingArgs | None = None,
        score: ScoreMode = "group",
    ) -> list[State]:
        """Synchronous ``a_generate`` (works inside and outside a running event loop)."""
        return run_sync(
            self.a_generate(
                rows,
                client,
                model,
                rollouts_per_example=rollouts_per_example,
                max_concurrent=max_concurrent,
                sampling_args=sampling_args,
                score=score,
            )
        )

    async def a_evaluate(
        self,
        client: ClientLike | None = None,
        model: str | None = None,
        *,
        config: EvalConfig | None = None,
        progress: RunProgress | None = None,
        on_group: ProgressCallback | None = None,
        **settings: Unpack[RunSettings],
    ) -> EvalRun:
        """Evaluate on the eval split, with the settings ``vf-eval`` resolves the same way
        (``verifiers.eval.config``: these arguments, then a resumed run's settings, then the package's
        ``[tool.verifiers.eval]``, then every example × 1 rollout). Results stream to ``results.jsonl``
        and ``metadata.json`` of the run directory (``output_dir``, default a new one under
        ./outputs/evals/; ``save_results=False`` keeps them in memory only); ``resume=True`` completes
        a previous run.

        ``client`` is a base URL or omitted (the config's target: ``model`` may then be a registry alias,
        ``local/smollm2`` or ``scripted:RULES.toml``, whose server is started for the run; the client is
        made, checked and closed here), or a ready client — a
        ``Client`` or an ``openai.AsyncOpenAI`` (taken over by the fast transport unless it needs the
        SDK; see ``verifiers.clients.as_client``) — which stays yours to close. ``config`` is a
        resolved ``EvalConfig``; pass it instead of ``model`` and the settings."""
        if config is not None and (settings or model is not None):
            raise TypeError("pass either config= or model and settings, not both")
        if config is None:
            given_settings: dict[str, Any] = dict(settings)
            if isinstance(client, str):
                given_settings["base_url"] = client
            if model is not None:
                given_settings["model"] = model
            config = resolve_eval_config(
                self.env_id, ("argument", given_settings), package_defaults=self.eval_defaults
            )
        if client is None or isinstance(client, str):
            return await run_config(self, config, progress=progress, on_group=on_group)
        async with owned_client(client, max_retries=config.max_retries) as client_obj:
            return await run_config(self, config, client=client_obj, progress=progress, on_group=on_group)

    def evaluate(
        self,
        client: ClientLike | None = None,
        model: str | None = None,
        *,
        config: EvalConfig | None = None,
        progress: RunProgress | None = None,
        on_group: ProgressCallback | None = None,
        **settings: Unpack[RunSettings],
    ) -> EvalRun:
        """Synchronous ``a_evaluate`` (works inside and outside a running event loop)."""
        return run_sync(
            self.a_evaluate(client, model, config=config, progress=progress, on_group=on_group, **settings)
        )
