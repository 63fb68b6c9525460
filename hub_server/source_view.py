"""The file browser of a version's sdist: one member read from the stored archive, highlighted by Pygments.

Work is bounded: the archive was checked at publish time (member count, sizes), a member is looked up by
name without unpacking the others, and at most ``MAX_SHOWN`` bytes of it are read. A file with a NUL
byte or that is not UTF-8 is shown as binary; a larger one as too large (download the sdist instead).
The highlighted markup uses CSS classes (``/static/pygments.css``): the CSP forbids inline styles.
"""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from typing import BinaryIO, Literal

from markupsafe import Markup
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import TextLexer, guess_lexer_for_filename
from pygments.util import ClassNotFound

MAX_SHOWN = 256 * 1024
_SNIFF = 8192

SourceKind = Literal["text", "binary", "large"]


@dataclass(frozen=True)
class SourceFile:
    path: str
    size: int
    kind: SourceKind
    html: Markup  # highlighted source for "text", empty otherwise
    lines: int


def _formatter() -> HtmlFormatter[str]:
    return HtmlFormatter(cssclass="highlight", linenos="table", wrapcode=True)


def stylesheet() -> str:
    """The CSS for the highlighted markup (written to ``static/pygments.css``; a test keeps them equal)."""
    return str(_formatter().get_style_defs(".highlight"))


def render_source(path: str, data: bytes, size: int) -> SourceFile:
    """``data`` (at most ``MAX_SHOWN`` bytes of a ``size``-byte file) as a viewable file."""
    if size > MAX_SHOWN:
        return SourceFile(path, size, "large", Markup(""), 0)
    if b"\x00" in data[:_SNIFF]:
        return SourceFile(path, size, "binary", Markup(""), 0)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return SourceFile(path, size, "binary", Markup(""), 0)
    try:
        lexer = guess_lexer_for_filename(path, text[:_SNIFF])
    except ClassNotFound:
        lexer = TextLexer()
    # Pygments escapes the text it is given; the result is markup the page may embed as is.
    return SourceFile(
        path,
        size,
        "text",
        Markup(highlight(text, lexer, _formatter())),
        text.count("\n") + (not text.endswith("\n")),
    )


def read_member(archive: BinaryIO, inner_path: str) -> tuple[bytes, int] | None:
    """The first ``MAX_SHOWN`` bytes and the size of ``<top>/<inner_path>`` in a .tar.gz sdist, or None."""
    with tarfile.open(fileobj=archive, mode="r:gz") as tar:
        for member in tar:
            parts = member.name.split("/", 1)
            if len(parts) == 2 and parts[1] == inner_path and member.isfile():
                if member.size > MAX_SHOWN:
                    return b"", member.size
                f = tar.extractfile(member)
                return (f.read(MAX_SHOWN) if f else b""), member.size
    return None
