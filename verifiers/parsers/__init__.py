"""Parsing model text into answers."""

from __future__ import annotations

from typing import TYPE_CHECKING

from verifiers._exports import lazy_exports

_EXPORTS: dict[str, str] = {
    "extract_boxed_answer": "verifiers.parsers.boxed",
    "extract_choice_letter": "verifiers.parsers.choice",
    "Parser": "verifiers.parsers.parser",
    "assistant_texts": "verifiers.parsers.parser",
    "message_text": "verifiers.parsers.parser",
    "question_text": "verifiers.parsers.parser",
    "MaybeThinkParser": "verifiers.parsers.think",
    "ThinkParser": "verifiers.parsers.think",
    "unclosed_think": "verifiers.parsers.think",
    "XMLParser": "verifiers.parsers.xml",
}
__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)

if TYPE_CHECKING:  # the same names, for type checkers and IDEs
    from verifiers.parsers.boxed import extract_boxed_answer as extract_boxed_answer
    from verifiers.parsers.choice import extract_choice_letter as extract_choice_letter
    from verifiers.parsers.parser import (
        Parser as Parser,
        assistant_texts as assistant_texts,
        message_text as message_text,
        question_text as question_text,
    )
    from verifiers.parsers.think import (
        MaybeThinkParser as MaybeThinkParser,
        ThinkParser as ThinkParser,
        unclosed_think as unclosed_think,
    )
    from verifiers.parsers.xml import XMLParser as XMLParser
