"""Parsing model text into answers."""

from verifiers.parsers.boxed import extract_boxed_answer
from verifiers.parsers.parser import Parser, assistant_texts, message_text, question_text
from verifiers.parsers.think import MaybeThinkParser, ThinkParser
from verifiers.parsers.xml import XMLParser

__all__ = [
    "MaybeThinkParser",
    "Parser",
    "ThinkParser",
    "XMLParser",
    "assistant_texts",
    "extract_boxed_answer",
    "message_text",
    "question_text",
]
