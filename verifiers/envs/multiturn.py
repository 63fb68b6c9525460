"""Multi-turn environments: the model and the environment take turns until a stop condition holds."""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
from abc import abstractmethod
from collections.abc import Callable
from typing import Any, TypeVar

from verifiers.clients import Client, Continuation
from verifiers.envs.environment import Environment
from verifiers.errors import OverlongPromptError, RolloutTimeoutError, error_record
from verifiers.trajectory import trajectory_step
from verifiers.types import ChatMessage, Messages, ModelResponse, Row, SamplingArgs, State

F = TypeVar("F", bound=Callable[..., Any])
#: State key of the last chat request's messages and its reply (what a token continuation covers); not
#: part of the result row.
_SENT = "_sent_messages"
logger = logging.getLogger(__name__)
#: stop_condition recorded for errors that end a rollout for a known reason (else "error").
_ERROR_STOPS: tuple[tuple[type[Exception], str], ...] = (
    (OverlongPromptError, "prompt_too_long"),
    (RolloutTimeoutError, "timeout"),
)


#: ``<think>…</think>`` blocks, or (templates that open the block in the prompt) all text up to a
#: lone ``</think>``.
_THINK = re.compile(r"<think>.*?</think>\s*|\A(?:(?!<think>).)*?</think>\s*", re.DOTALL)


def without_reasoning(message: ChatMessage) -> ChatMessage:
    """An assistant message without its reasoning: no ``reasoning_content`` (or ``reasoning``), and no
    ``<think>…</think>`` text in its content. Other messages are returned as they are."""
    if message.get("role") != "assistant":
        return message
    out = {k: v for k, v in message.items() if k not in ("reasoning_content", "reasoning")}
    content = out.get("content")
    if isinstance(content, str) and "</think>" in content:
        out["content"] = _THINK.sub("", content)
    return out


def stop(func: F | None = None, *, priority: int = 0) -> Any:
    """Declare a method ``(self, state) -> bool`` (sync or async) as a stop condition.

    Conditions are checked before every model call and after every model response, highest
    ``priority`` first, then in declaration order (base classes first); the first that holds ends the
    rollout and its name becomes ``stop_condition``.
    """

    def mark(f: F) -> F:
        f.__vf_stop__ = priority  # type: ignore[attr-defined]
        return f

    return mark(func) if func is not None else mark


class MultiTurnEnv(Environment):
    """Loop: model response → stop checks → ``env_response`` → stop checks → model response …

    Built-in stop conditions, in order: the environment asked to stop (``state.stop(reason)``), the
    model's answer was cut off (``truncated``), the declared ``@stop`` methods, ``max_turns`` (model
    turns; ``responds_after_last_turn`` decides whether the environment still answers the last one).

    Every model call that returned token ids adds a step to ``state["trajectory"]``
    (``verifiers.trajectory``); with ``max_seq_len`` a prompt that no longer fits ends the rollout as
    ``prompt_too_long`` (truncated, not an error). ``interleaved_thinking=False`` drops earlier turns'
    reasoning from the requests (``request_messages``). See docs/training.md.
    """

    _stop_names: tuple[str, ...] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        found: dict[str, tuple[int, int]] = {}
        order = 0
        for klass in reversed(cls.__mro__):
            for name, attr in vars(klass).items():
                if hasattr(attr, "__vf_stop__"):
                    if name not in found:
                        found[name] = (attr.__vf_stop__, order)
                        order += 1
                    else:  # overridden: keep the original position, take the new priority
                        found[name] = (attr.__vf_stop__, found[name][1])
                elif name in found:  # overridden by a method that is no longer a stop condition
                    del found[name]
        cls._stop_names = tuple(sorted(found, key=lambda n: (-found[n][0], found[n][1])))

    def __init__(self, *, max_turns: int = 10, **kwargs: Any) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        super().__init__(**kwargs)
        self.max_turns = max_turns

    # --- hooks -------------------------------------------------------------------------------------
    async def setup_state(self, state: State) -> None:
        """Prepare per-rollout state before the first model call."""

    @abstractmethod
    async def env_response(self, messages: Messages | str, state: State) -> Messages | str:
        """The environment's reply to the model's last message: new messages to append (chat) or text
        (completion). Call ``state.stop(reason)`` to end the rollout instead."""

    async def cleanup_state(self, state: State) -> None:
        """Release per-rollout resources; runs after every rollout, even on error or cancellation."""

    def tools_for(self, state: State) -> list[dict[str, Any]] | None:
        """OpenAI tool schemas offered to the model on this rollout (none by default)."""
        return None

    def responds_after_last_turn(self, state: State) -> bool:
        """Whether ``env_response`` still runs after the model's last turn within ``max_turns`` (no:
        a reply nobody reads; ``ToolEnv``: yes when that turn called tools, so that they run)."""
        return False

    # --- loop --------------------------------------------------------------------------------------
    async def _should_stop(self, state: State) -> bool:
        if state.get("stop_condition"):
            return True
        if state.get("is_truncated"):
            state["stop_condition"] = "truncated"
            return True
        for name in self._stop_names:
            result = getattr(self, name)(state)
            if inspect.isawaitable(result):
                result = await result
            if result:
                state["stop_condition"] = name
                return True
        if len(state["turns"]) >= self.max_turns:
            state["stop_condition"] = "max_turns"
            return True
        return False

    def request_messages(self, state: State) -> Messages:
        """The chat messages the next model call sends: the prompt and the conversation so far, with
        earlier turns' reasoning dropped unless ``interleaved_thinking`` (the rollout's ``completion``
        keeps it either way, for scoring)."""
        prompt: Messages = state["prompt"]
        completion: Messages = state["completion"]
        if not self.interleaved_thinking:
            completion = [without_reasoning(m) for m in completion]
        return prompt + completion

    async def model_response(
        self,
        client: Client,
        model: str,
        state: State,
        sampling_args: SamplingArgs | None,
        endpoint: int | None,
    ) -> ModelResponse:
        if self.message_type == "chat":
            messages = self.request_messages(state)
            resp = await client.chat(
                model,
                messages,
                sampling_args=sampling_args,
                tools=self.tools_for(state),
                endpoint=endpoint,
                state=state,
                continuation=self._continuation(state, messages),
            )
            state[_SENT] = [*messages, resp.message]
            return resp
        return await client.complete(
            model, state["prompt"] + state["completion"], sampling_args=sampling_args, endpoint=endpoint
        )

    @staticmethod
    def _continuation(state: State, messages: Messages) -> Continuation | None:
        """The conversation so far in tokens, for a client that continues from token ids: the last model
        call's prompt + completion ids, when that call returned them, was not cut off, and its request and
        reply are still, unchanged, the head of this request (an environment that rewrote the history,
        or dropped earlier reasoning, goes the message path)."""
        trajectory, sent = state["trajectory"], state.get(_SENT)
        if not trajectory or not sent or len(trajectory) != len(state["turns"]):
            return None
        last = trajectory[-1]
        if last["is_truncated"] or not last["completion_ids"] or list(messages[: len(sent)]) != sent:
            return None
        return Continuation([*last["prompt_ids"], *last["completion_ids"]], len(sent))

    def _append(self, state: State, new: Messages | str) -> None:
        if self.message_type == "chat":
            if isinstance(new, str):
                new = [{"role": "user", "content": new}]
            state["completion"].extend(new)
        else:
            state["completion"] += (
                new if isinstance(new, str) else "".join(str(m.get("content", "")) for m in new)
            )

    async def _loop(
        self,
        client: Client,
        model: str,
        state: State,
        sampling_args: SamplingArgs | None,
        endpoint: int | None,
    ) -> None:
        await self.setup_state(state)
        while not await self._should_stop(state):
            resp = await self.model_response(client, model, state, sampling_args, endpoint)
            state["turns"].append(resp.turn_record())
            usage = state["usage"]
            usage["prompt_tokens"] += resp.prompt_tokens
            usage["completion_tokens"] += resp.completion_tokens
            if resp.finish_reason == "length":
                state["is_truncated"] = True
            trajectory = state["trajectory"]
            step = trajectory_step(resp, trajectory[-1] if trajectory else None, self.max_seq_len)
            if step is not None:
                trajectory.append(step)
                if step["overlong_prompt"]:
                    # The prompt no longer fits: the answer to it is outside what a trainer sees.
                    state["is_truncated"] = True
                    state["stop_condition"] = "prompt_too_long"
                    break
                if step["is_truncated"]:
                    state["is_truncated"] = True
            self._append(state, [resp.message] if self.message_type == "chat" else resp.text)
            if await self._should_stop(state):
                if state["stop_condition"] == "max_turns" and self.responds_after_last_turn(state):
                    # The budget counts model turns: what the last one asked for still happens (its tool
                    # calls run, a final answer given through a tool counts); no model call follows it.
                    self._append(state, await self.env_response(state["completion"], state))
                break
            self._append(state, await self.env_response(state["completion"], state))

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
        state = self.init_state(row, rollout_index)
        # The engine passes what the request family sends; a direct call gets this environment's own.
        args = sampling_args if sampling_args is not None else self.request_sampling_args(None, row)
        deadline = asyncio.timeout(self.timeout)  # None: no budget
        # With a token budget, a prompt the server refuses as too long is a truncation, not an error.
        truncating: tuple[type[Exception], ...] = (
            (OverlongPromptError,) if self.max_seq_len is not None else ()
        )
        try:
            try:
                async with deadline:
                    await self._loop(client, model, state, args, endpoint)
            except TimeoutError:
                if not deadline.expired():  # a TimeoutError from inside, not our budget
                    raise
                raise RolloutTimeoutError(
                    f"rollout exceeded its {self.timeout:g}s wall-clock budget"
                ) from None
        except truncating:
            # Ends the rollout as truncated, the same as a prompt past max_seq_len (a trainer masks it).
            state["is_truncated"] = True
            state["stop_condition"] = "prompt_too_long"
        except Exception as exc:
            state["error"] = error_record(exc)
            state["stop_condition"] = next(
                (name for kind, name in _ERROR_STOPS if isinstance(exc, kind)), "error"
            )
        finally:
            await asyncio.shield(self._cleanup(state))
        return state

    async def _cleanup(self, state: State) -> None:
        try:
            await self.cleanup_state(state)
        except Exception as exc:  # a failed cleanup is an env bug worth seeing, not a crash of the run
            if state.get("error") is None:
                state["error"] = error_record(exc)
            else:  # the rollout's own error stays the recorded cause; this one must not vanish
                logger.warning("cleanup_state failed after a rollout error: %r", exc)
