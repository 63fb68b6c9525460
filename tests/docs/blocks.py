"""The code blocks of the docs, as the docs-as-tests tier sees them: every fenced block of README.md,
docs/*.md and environments/*/README.md (markdown-it, so fences inside lists count too), and every
command of a shell block (continuation lines and multi-line quotes joined, comments and prompts apart).

A shell command is known by its text without its trailing comment, whitespace collapsed; any other block
by its language and first line. Editing a command therefore makes it unclassified until someone looks at
it again (tests/docs/classified.py).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from markdown_it import MarkdownIt

ROOT = Path(__file__).resolve().parents[2]
SHELL_LANGUAGES = frozenset({"bash", "sh", "shell", "console", "zsh"})


def doc_files(root: Path = ROOT) -> list[str]:
    """The documents the tier covers, relative to the checkout."""
    paths = [root / "README.md", *sorted((root / "docs").glob("*.md"))]
    paths += sorted((root / "environments").glob("*/README.md"))
    return [str(p.relative_to(root)) for p in paths if p.is_file()]


@dataclass(frozen=True)
class Block:
    doc: str
    line: int  # 1-based line of the opening fence
    language: str
    text: str

    @property
    def key(self) -> str:
        first = next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")
        return f"{self.language or 'text'}: {first}"

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"


@dataclass(frozen=True)
class Command:
    """One logical command of a shell block."""

    block: Block
    line: int  # 1-based line in the document
    text: str  # as printed, continuation lines joined with newlines, trailing comment kept

    @property
    def key(self) -> str:
        return " ".join(strip_comment(self.text).replace("\\\n", " ").split())

    @property
    def where(self) -> str:
        return f"{self.block.doc}:{self.line}"


def blocks(doc: str, root: Path = ROOT) -> list[Block]:
    """The fenced code blocks of ``doc``, in order."""
    tokens = MarkdownIt("commonmark").parse((root / doc).read_text())
    out = []
    for tok in tokens:
        if tok.type == "fence" and tok.map is not None:
            language = tok.info.split()[0] if tok.info.strip() else ""
            out.append(Block(doc, tok.map[0] + 1, language, tok.content))
    return out


def strip_comment(text: str) -> str:
    """``text`` without a shell comment: a ``#`` outside quotes at a word's start, to its line's end."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"':
                out.append(ch)
                i += 1
                ch = text[i] if i < len(text) else ""
        elif ch in "'\"":
            quote = ch
        elif ch == "\\":
            out.append(ch)
            i += 1
            ch = text[i] if i < len(text) else ""
        elif ch == "#" and (not out or out[-1].isspace()):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        out.append(ch)
        i += 1
    return "".join(out).rstrip()


def _complete(text: str) -> bool:
    """Whether ``text`` is a whole command: no open quote, no trailing backslash."""
    if strip_comment(text).endswith("\\"):
        return False
    try:
        shlex.split(strip_comment(text))
    except ValueError:  # an open quote: the command goes on on the next line
        return False
    return True


def commands(block: Block) -> Iterator[Command]:
    """The commands of a shell block (``$ `` prompts dropped; comment-only lines are not commands)."""
    lines = block.text.splitlines()
    i = 0
    while i < len(lines):
        start = i
        text = lines[i].removeprefix("$ ")
        while not _complete(text) and i + 1 < len(lines):
            i += 1
            text += "\n" + lines[i]
        i += 1
        if strip_comment(text).strip():
            # The fence is on block.line; its first content line one below.
            yield Command(block, block.line + 1 + start, text)


# An unquoted < or > glued to a word (``name@>=0.1``) is a redirect the writer did not mean: bash
# installs ``name@`` and writes a file ``=0.1``. Deliberate redirects stand apart, or follow a digit or &;
# ``<name>`` is a placeholder the reader replaces, not a redirect.
_GLUED_REDIRECT = re.compile(r"[^\s\d&<>|(]([<>])")
_PLACEHOLDER = re.compile(r"<[A-Za-z][\w-]*>")


def glued_redirects(command: Command) -> list[str]:
    """The words of ``command`` holding a ``<``/``>`` outside quotes that bash would take as a redirect."""
    bare: list[str] = []
    quote: str | None = None
    for ch in strip_comment(command.text):
        if quote:
            bare.append(" ")
            if ch == quote:
                quote = None
        elif ch in "'\"":
            quote = ch
            bare.append(" ")
        else:
            bare.append(ch)
    text = _PLACEHOLDER.sub(lambda m: "x" * len(m.group(0)), "".join(bare))
    return [m.group(0) for m in _GLUED_REDIRECT.finditer(text)]
