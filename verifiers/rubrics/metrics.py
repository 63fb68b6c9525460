"""Metric functions any rubric can add (``rubric.add_metric(truncated)``)."""

from __future__ import annotations

from verifiers.parsers.parser import assistant_texts
from verifiers.parsers.think import unclosed_think
from verifiers.types import Messages, State


def truncated(completion: Messages | str, state: State) -> float:
    """1.0 when the answer was cut off — the server stopped at the token limit (``is_truncated``) or the last
    message ends inside an unclosed ``<think>`` — else 0.0. Such a rollout scores 0 (nothing is read from
    cut-off reasoning); this metric tells those zeros apart from wrong answers."""
    texts = assistant_texts(completion)
    cut = bool(state.get("is_truncated")) or (bool(texts) and unclosed_think(texts[-1]))
    return 1.0 if cut else 0.0
