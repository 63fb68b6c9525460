"""A BM25 search index over pages: SQLite FTS5 from the standard library, in memory, built at load.

Queries are free text from a model, so they are never passed to FTS5's query language as written: they
are cut into the same tokens FTS5 indexes (``unicode61``), stop words are dropped, and each remaining
token becomes a quoted term, OR-ed together and ranked by BM25 (titles weigh 5x the body).

Why "very common" tokens are dropped too: ranking an OR query scores every page that holds any of its
terms, so one token found on most pages (``city``, ``founded`` ...) makes a search over 100,000 pages
score nearly all of them. A token on more than ``common_fraction`` of the pages adds almost nothing to
BM25 (its IDF is near zero) and is left out of the match whenever the query has a rarer token.
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass

from deep_research_env.corpus import Page

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "he",
        "her",
        "his",
        "how",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "she",
        "that",
        "the",
        "their",
        "them",
        "they",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whom",
        "whose",
        "why",
        "will",
        "with",
        "did",
        "does",
        "do",
        "of",
    ]
)
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
TITLE_WEIGHT = 5.0


def tokens(text: str) -> list[str]:
    """Lower-case word tokens, close to FTS5's ``unicode61`` tokenizer."""
    return _TOKEN.findall(text.lower())


@dataclass(frozen=True, slots=True)
class Hit:
    url: str
    title: str
    snippet: str
    score: float


class BM25Index:
    """Pages indexed for BM25 search; ``get(url)`` returns a page by its URL.

    One connection, used under a lock: searches are sub-millisecond, so serialising them costs less
    than a connection per thread (and an in-memory database cannot be shared across connections).
    """

    def __init__(self, pages: Iterable[Page], *, common_fraction: float = 0.05) -> None:
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._lock = threading.Lock()
        self._pages: dict[str, Page] = {}
        db = self._db
        db.execute("CREATE VIRTUAL TABLE pages USING fts5(url UNINDEXED, title, body, tokenize='unicode61')")
        rows = []
        for page in pages:
            if page.url in self._pages:
                raise ValueError(f"two pages have the URL {page.url!r}")
            self._pages[page.url] = page
            rows.append((page.url, page.title, page.text))
        with db:
            db.executemany("INSERT INTO pages(url, title, body) VALUES (?, ?, ?)", rows)
            db.execute(
                "INSERT INTO pages(pages, rank) VALUES ('rank', ?)", (f"bm25(0.0, {TITLE_WEIGHT}, 1.0)",)
            )
            db.execute("INSERT INTO pages(pages) VALUES ('optimize')")  # one b-tree segment: faster reads
        db.execute("CREATE VIRTUAL TABLE vocab USING fts5vocab(pages, 'row')")
        self._df: dict[str, int] = dict(db.execute("SELECT term, doc FROM vocab"))
        self.common_cutoff = max(20, int(common_fraction * len(self._pages)))

    def __len__(self) -> int:
        return len(self._pages)

    def get(self, url: str) -> Page | None:
        return self._pages.get(url)

    @property
    def urls(self) -> list[str]:
        return list(self._pages)

    def match_expression(self, query: str) -> str | None:
        """The FTS5 expression searched for ``query`` (``None`` when nothing searchable is left)."""
        terms = list(dict.fromkeys(t for t in tokens(query) if t not in STOPWORDS))
        if not terms:
            return None
        rare = [t for t in terms if self._df.get(t, 0) <= self.common_cutoff]
        if not rare:  # only common words: the two rarest still say something
            rare = sorted(terms, key=lambda t: self._df.get(t, 0))[:2]
        return " OR ".join(f'"{t}"' for t in rare)

    def search(self, query: str, k: int = 10) -> list[Hit]:
        expr = self.match_expression(query)
        if expr is None or k < 1:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT url, title, snippet(pages, 2, '', '', ' … ', 24), rank FROM pages "
                "WHERE pages MATCH ? ORDER BY rank LIMIT ?",
                (expr, k),
            ).fetchall()
        return [Hit(url, title, " ".join(snippet.split()), -score) for url, title, snippet, score in rows]

    def raw_connection(self) -> sqlite3.Connection:
        """The underlying connection (for the benchmark's plain-FTS5 baseline)."""
        return self._db
