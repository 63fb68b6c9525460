"""Science answers: unit stripping, answer kinds, and the normalised forms of word and letter answers.

Unit stripping is deliberately conservative: it removes only *known* units (SI and common chemistry,
physics and time units, optionally prefixed), only when they follow the number after a space, LaTeX
spacing, or inside a ``\\text{}``-like wrapper, and only when a number remains. So ``9.8\\,\\text{m/s}^2``,
``25\\ ^{\\circ}\\mathrm{C}`` and ``2.0 mol`` lose their units, while ``2mg`` or ``3x`` keep every letter.
Units are not converted: ``5 km`` and ``5 m`` both become ``5`` (the known limitation of stripping).
"""

from __future__ import annotations

import re
from typing import Literal

AnswerKind = Literal["numeric", "symbolic", "word", "choice"]

_PREFIX = r"(?:[pnumcdkMGT]|µ|μ|\\mu\s*)"
_BASE = (
    r"(?:mol|cd|Pa|Hz|Wb|eV|Da|atm|bar|cal|Cal|amu|m|s|g|K|A|N|J|W|C|V|T|L|M|F|H|Ω|\\Omega|ohms?|"
    r"rad|sr|Bq|Gy|Sv|min|hr|h|yr|years?|days?|seconds?|minutes?|hours?|meters?|metres?|grams?|liters?|litres?|"
    r"moles?|joules?|newtons?|watts?|volts?|amperes?|amps?|kelvins?)"
)
_EXP = r"(?:\^\s*\{?\s*[-−]?\d+\s*\}?)?"
_ATOM = rf"\(?(?:{_PREFIX}?{_BASE}){_EXP}\)?"
_UNIT_EXPR = rf"{_ATOM}(?:\s*(?:/|\\cdot|·|\*|\s)\s*{_ATOM})*"
_UNIT_RE = re.compile(rf"^\s*{_UNIT_EXPR}\s*$")
_SPACING = re.compile(r"\\[,;:! ]|~|\\q?quad\b")
_WRAPPER = re.compile(
    r"\\(?:text|mathrm|textrm|mbox|operatorname|textnormal|rm|mathit|textit|textbf|mathbf)\s*\{([^{}]*)\}"
)
_DEGREE = re.compile(
    r"\s*(?:\^\s*\{?\s*\\circ\s*\}?|\\circ|°|\\degree)\s*(?:\\(?:text|mathrm|textrm)\s*\{\s*[CFK]\s*\}|[CFK])?\s*$"
)
_TRAILING_UNIT = re.compile(rf"(?:\s|^)({_UNIT_EXPR})\s*$")
_HAS_DIGIT = re.compile(r"\d")


def _unwrap_units(text: str) -> str:
    """``\\text{m/s}``-style groups whose content is a unit become plain ``" m/s"`` (then stripped as
    trailing units); ``\\mu\\text{m}`` becomes ``\\mu m``, a prefixed unit."""

    def plain(m: re.Match[str]) -> str:
        content = _SPACING.sub(" ", m.group(1))
        return " " + content.strip() if _UNIT_RE.match(content) else m.group(0)

    return _WRAPPER.sub(plain, text)


def strip_units(text: str) -> str:
    """``text`` without trailing physical units (see the module docstring); unchanged if no number
    would remain."""
    original = text.strip()
    s = _SPACING.sub(" ", original)
    s = _unwrap_units(s)
    s = _DEGREE.sub("", s)
    for _ in range(3):  # a unit split in parts ("kg" "m/s") comes off in at most a few passes
        m = _TRAILING_UNIT.search(s)
        if not m or not _HAS_DIGIT.search(s[: m.start(1)]):
            break
        s = s[: m.start(1)]
    s = re.sub(r"\s+", " ", s).strip()
    return s if s and _HAS_DIGIT.search(s) else original


_CHOICE = re.compile(
    r"^\s*(?:(?:the\s+)?(?:answer|option|choice)\s*(?:is)?\s*[:=]?\s*)?\(?\s*([A-Ja-j])\s*\)?(?:[.:)\s]|$)",
    re.IGNORECASE,
)
_UNWRAP = re.compile(
    r"\\(?:text|mathrm|textrm|mbox|operatorname|textnormal|rm|mathit|textit|textbf|mathbf|ce)\s*\{([^{}]*)\}"
)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+")


def unwrap_text(text: str) -> str:
    """LaTeX text wrappers removed (``\\text{Mitochondria}`` → ``Mitochondria``), ``$`` dropped."""
    prev = None
    s = text
    while prev != s:
        prev, s = s, _UNWRAP.sub(r"\1", s)
    return s.replace("$", "").strip()


def choice_letter(text: str) -> str | None:
    """The option letter of a multiple-choice answer: ``B``, ``(b)``, ``\\text{B}``, ``B) argon``."""
    m = _CHOICE.match(unwrap_text(text))
    return m.group(1).upper() if m else None


def normalize_words(text: str) -> str:
    """Case-, markup-, punctuation- and article-insensitive form of a word answer (``H_2O`` → ``h2o``)."""
    s = unwrap_text(text).casefold()
    s = re.sub(r"[_{}^]", "", s)
    s = re.sub(r"[^\w\s+-]", " ", s)
    s = re.sub(r"[-\s]+", " ", s).strip()
    return _ARTICLE.sub("", s)


_NUMERIC_COMMANDS = re.compile(r"\\(?:d?t?frac|sqrt|times|cdot|pi|left|right)\b")
_NUMBER_ONLY = re.compile(r"[\d\s.,+\-−*/^(){}\[\]]*\d[\d\s.,+\-−*/^(){}\[\]]*")
_MATH_HINT = re.compile(r"\d|\\(?:frac|sqrt|times|cdot|pi|theta|alpha|beta|lambda|sin|cos|tan|log|ln)|[=^/$]")


def classify(answer: str) -> AnswerKind:
    """The kind of a gold answer that carries no ``info["answer_type"]``.

    A lone option letter is a ``choice``; anything with digits or math markup (``$...$`` included) is
    ``numeric`` when only a number is left after unit stripping, else ``symbolic``; plain words (``mgh``
    too: mark variables up as math) are ``word``.
    """
    s = answer.strip()
    if re.fullmatch(r"\(?\s*[A-J]\s*\)?\.?", unwrap_text(s)):
        return "choice"
    if _MATH_HINT.search(s):
        if _NUMBER_ONLY.fullmatch(_NUMERIC_COMMANDS.sub(" ", strip_units(s))):
            return "numeric"
        if re.fullmatch(r"[A-Za-z]+(?:_?\{?\d+\}?[A-Za-z]*)+", unwrap_text(s)):  # a formula like H_2O
            return "word"
        return "symbolic"
    return "word"
