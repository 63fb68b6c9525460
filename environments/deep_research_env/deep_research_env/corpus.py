"""Pages: the bundled encyclopedia, a user's corpus directory, and turning HTML / PDF bytes into text."""

from __future__ import annotations

import html
import io
import json
import re
from functools import cache
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

CORPUS_SUFFIXES = (".md", ".markdown", ".txt", ".html", ".htm")
ONLINE_HINT = "pip install 'deep-research-env[online]'"


class Page(BaseModel):
    """One readable document: where it came from, its title and its plain text."""

    model_config = ConfigDict(frozen=True)

    url: str
    title: str
    text: str
    content_type: str = "text/markdown"

    @property
    def lines(self) -> list[str]:
        return self.text.splitlines()


@cache
def bundled_pages() -> tuple[Page, ...]:
    """The bundled fictional encyclopedia (``data/corpus.jsonl``, written by ``encyclopedia.write``)."""
    return tuple(Page(**r) for r in _bundled_jsonl("corpus.jsonl"))


@cache
def bundled_questions() -> tuple[dict[str, Any], ...]:
    """The bundled multi-hop questions, each with ``hops`` (the recorded chain) and ``template``."""
    return tuple(_bundled_jsonl("questions.jsonl"))


def _bundled_jsonl(name: str) -> list[dict[str, Any]]:
    text = (resources.files("deep_research_env") / "data" / name).read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


# --- text extraction ---------------------------------------------------------------------------------
class _TextCollector(HTMLParser):
    """A small stdlib fallback: visible text, one line per block element, scripts and styles dropped."""

    _BLOCKS = frozenset({"p", "div", "br", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "section",
                         "article", "header", "footer", "pre", "table", "ul", "ol", "blockquote"})  # fmt: skip

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.title = ""
        self._skip = 0
        self._in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip += 1
        elif tag == "title":
            self._in_title = True
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style", "noscript", "template"):
            self._skip = max(0, self._skip - 1)
        elif tag == "title":
            self._in_title = False
        elif tag in self._BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self.title += data
        elif not self._skip:
            self.parts.append(data)


def _tidy(text: str) -> str:
    lines = [re.sub(r"[ \t\r\f\v]+", " ", line).strip() for line in text.splitlines()]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):  # collapse runs of blank lines
            out.append(line)
    return "\n".join(out).strip() + "\n"


def html_title(raw: str) -> str:
    m = re.search(r"<title[^>]*>(.*?)</title>", raw, re.IGNORECASE | re.DOTALL) or re.search(
        r"<h1[^>]*>(.*?)</h1>", raw, re.IGNORECASE | re.DOTALL
    )
    return html.unescape(re.sub(r"<[^>]+>", "", m.group(1))).strip() if m else ""


def html_to_text(raw: str, *, prefer_trafilatura: bool = True) -> str:
    """Main text of an HTML page: trafilatura when installed (boilerplate removed), else all visible text."""
    if prefer_trafilatura:
        try:
            import trafilatura
        except ImportError:
            pass
        else:
            text = trafilatura.extract(raw, include_comments=False, include_tables=True, favor_recall=True)
            if text and text.strip():
                return _tidy(text)
    collector = _TextCollector()
    collector.feed(raw)
    collector.close()
    return _tidy("".join(collector.parts))


def pdf_to_text(data: bytes) -> tuple[str, str]:
    """``(title, text)`` of a PDF, one block per page, via pypdf."""
    try:
        from pypdf import PdfReader
    except ImportError as exc:
        raise ImportError(f"reading PDFs needs pypdf: {ONLINE_HINT}") from exc
    reader = PdfReader(io.BytesIO(data))
    pages = [(p.extract_text() or "").strip() for p in reader.pages]
    meta = reader.metadata
    title = str(meta.title) if meta is not None and meta.title else ""
    return title, _tidy("\n\n".join(pages))


# --- a user's corpus directory -----------------------------------------------------------------------
def load_directory(directory: str | Path) -> list[Page]:
    """Every ``.md`` / ``.markdown`` / ``.txt`` / ``.html`` / ``.htm`` file under ``directory`` as a page
    with URL ``local://<relative/path>`` and a title from its first heading (or ``<title>``, or the
    file name). Files are read in sorted order, so the index is the same on every load."""
    root = Path(directory).expanduser()
    if not root.is_dir():
        raise ValueError(f"corpus_dir {str(root)!r} is not a directory")
    pages: list[Page] = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in CORPUS_SUFFIXES):
        raw = path.read_text(encoding="utf-8", errors="replace")
        rel = path.relative_to(root).as_posix()
        if path.suffix.lower() in (".html", ".htm"):
            text, title, ctype = html_to_text(raw), html_title(raw), "text/html"
        else:
            text, ctype = _tidy(raw), "text/markdown" if path.suffix.lower() != ".txt" else "text/plain"
            heading = next((ln.lstrip("#").strip() for ln in text.splitlines() if ln.startswith("#")), "")
            title = heading
        pages.append(Page(url=f"local://{rel}", title=title or path.stem, text=text, content_type=ctype))
    if not pages:
        raise ValueError(f"corpus_dir {str(root)!r} holds no {', '.join(CORPUS_SUFFIXES)} files")
    return pages
