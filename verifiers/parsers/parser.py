"""The base parser: turns model text (or a whole completion) into the answer a rubric checks."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from verifiers.types import Messages

ExtractFn = Callable[[str], str | None]


def _identity(text: str) -> str | None:
    return text.strip()


def message_text(message: Mapping[str, Any]) -> str | None:
    """A message's text: its string content, or its text parts joined; ``None`` if it has no text."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return None


def assistant_texts(completion: Messages | str) -> list[str]:
    """The text of every assistant message in a completion (a plain string is one message)."""
    if isinstance(completion, str):
        return [completion]
    texts = (message_text(m) for m in completion if m.get("role") == "assistant")
    return [t for t in texts if t is not None]


def question_text(prompt: Messages | str | None, info: Mapping[str, Any] | None = None) -> str:
    """The question a rollout answered: ``info["question"]`` if set (environments that wrap the question in
    instructions keep the bare one there), else the last user message."""
    if info and isinstance(info.get("question"), str):
        return str(info["question"])
    if prompt is None:
        return ""
    if isinstance(prompt, str):
        return prompt
    for msg in reversed(prompt):
        if msg.get("role") == "user":
            return message_text(msg) or ""
    return ""


class Parser:
    """Extracts an answer from text with ``extract_fn`` (default: the stripped text itself).

    ``parse_answer(completion)`` applies ``parse`` to the last assistant message; ``None`` means no
    answer could be found (rubrics score that 0 and report ``parsed = 0``).
    """

    def __init__(self, extract_fn: ExtractFn | None = None) -> None:
        self.extract_fn: ExtractFn = extract_fn or _identity

    def parse(self, text: str) -> Any:
        return self.extract_fn(text)

    def parse_answer(self, completion: Messages | str) -> str | None:
        texts = assistant_texts(completion)
        if not texts:
            return None
        parsed = self.parse(texts[-1])
        return None if parsed is None else str(parsed)

    def follows_format(self, text: str) -> bool:
        """Whether one assistant message has the expected shape (override in structured parsers)."""
        return self.parse(text) is not None

    def get_format_reward_func(self) -> Callable[..., float]:
        """A reward function: the fraction of assistant messages that follow the format."""

        def format_reward(completion: Messages | str) -> float:
            texts = assistant_texts(completion)
            if not texts:
                return 0.0
            return sum(1.0 for t in texts if self.follows_format(t)) / len(texts)

        return format_reward
