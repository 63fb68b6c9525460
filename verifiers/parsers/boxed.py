"""``\\boxed{}`` answer extraction with real brace matching, linear in the text length."""

from __future__ import annotations

import re

# One pass over the tokens that matter: a box opener, or a single brace.
_TOKENS = re.compile(r"\\(?:boxed|fbox)\s*\{|\{|\}")
_BARE_BOX = re.compile(r"\\boxed +([^\s${}]+)")


def extract_boxed_answer(text: str) -> str | None:
    """The content of the last complete ``\\boxed{...}`` (or ``\\fbox{...}``) in ``text``.

    Nested braces are matched (``\\boxed{\\frac{1}{2}}`` gives ``\\frac{1}{2}``); an unclosed box is
    ignored; ``\\boxed 5`` (no braces) is accepted when no braced box exists. Hostile inputs (deep
    nesting, thousands of unclosed boxes) cost one linear scan.
    """
    if "\\boxed" not in text and "\\fbox" not in text:
        return None
    stack: list[int] = []  # content start for box openers, -1 for plain braces
    best_start = -1
    best: tuple[int, int] | None = None
    for m in _TOKENS.finditer(text):
        tok = m.group()
        if tok == "}":
            if not stack:
                continue
            start = stack.pop()
            if start >= 0 and start > best_start:
                best_start = start
                best = (start, m.start())
        elif tok == "{":
            stack.append(-1)
        else:
            stack.append(m.end())
    if best is not None:
        return text[best[0] : best[1]].strip()
    bare = _BARE_BOX.findall(text)
    return bare[-1] if bare else None
