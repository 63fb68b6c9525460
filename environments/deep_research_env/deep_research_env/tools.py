"""The research tools, in two presets: ``research`` (search_web, scan_page, open_lines, finish) and ``i3``
(search, open, click, finish). Each takes a hidden ``session`` (the rollout's backend and bookkeeping),
injected by the environment; the model never sees it."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

from deep_research_env.backends import Backend, ResearchToolError
from deep_research_env.corpus import Page
from deep_research_env.index import Hit

MAX_QUERIES = 10
MAX_RESULTS = 10
MAX_PATTERN_CHARS = 300


@dataclass
class Session:
    """What one rollout's tools share."""

    backend: Backend
    state: Any
    max_output_chars: int = 8000
    queries: list[str] = field(default_factory=list)
    opened: set[str] = field(default_factory=set)
    last_results: list[Hit] | None = None
    final_answer: str | None = None

    def count(self, key: str, n: float = 1.0) -> None:
        metrics = self.state.setdefault("metrics", {})
        metrics[key] = metrics.get(key, 0.0) + n

    async def search(self, query: str, k: int) -> list[Hit]:
        self.queries.append(query)
        self.count("searches")
        return await self.backend.search(query, k)

    async def open(self, url: str) -> Page:
        page = await self.backend.fetch(url)
        if url not in self.opened:
            self.opened.add(url)
            self.count("pages_opened")
        return page

    def cut(self, text: str) -> str:
        """Every tool output ends here: cut at ``max_output_chars`` with a marker saying how much."""
        limit = self.max_output_chars
        if len(text) <= limit:
            return text
        return (
            f"{text[:limit]}\n[... output truncated: {len(text) - limit:,} of {len(text):,} characters "
            "not shown; ask for less, e.g. a line range or a pattern]"
        )


def _results_block(hits: list[Hit], *, start: int = 1) -> list[str]:
    out = []
    for i, h in enumerate(hits, start):
        out += [f"[{i}] {h.title}", f"    URL: {h.url}"]
        if h.snippet:
            out.append(f"    {h.snippet}")
    return out


def _check_count(name: str, value: int, lo: int, hi: int) -> None:
    if not lo <= value <= hi:
        raise ResearchToolError(f"{name} must be between {lo} and {hi}, not {value}")


def _numbered(lines: list[str], numbers: list[int]) -> list[str]:
    return [f"L{n}: {lines[n]}" for n in numbers]


def _header(page: Page) -> list[str]:
    return [
        f"Source: {page.url}",
        f"Title: {page.title}",
        f"Content type: {page.content_type}",
        f"Characters: {len(page.text):,}",
        f"Lines: {len(page.lines)}",
    ]


# --- research preset -----------------------------------------------------------------------------------
async def search_web(queries: list[str], session: Session, num_results_per_query: int = 3) -> str:
    """Search the web with up to 10 queries at once; returns title, URL and snippet per result.

    Args:
        queries: Search queries (1 to 10), run in parallel.
        num_results_per_query: Results to return per query (1 to 10).
    """
    queries = [q.strip() for q in queries]
    _check_count("the number of queries", len(queries), 1, MAX_QUERIES)
    _check_count("num_results_per_query", num_results_per_query, 1, MAX_RESULTS)
    if not all(queries):
        raise ResearchToolError("queries must not be empty strings")
    if len(queries) == 1:  # the common case: no task machinery
        results = [await session.search(queries[0], num_results_per_query)]
    else:
        results = await asyncio.gather(*(session.search(q, num_results_per_query) for q in queries))
    out: list[str] = []
    for i, (q, hits) in enumerate(zip(queries, results, strict=True), 1):
        out.append(f"=== Query {i}: {q} ===")
        out += _results_block(hits) if hits else ["No results."]
        out.append("")
    return session.cut("\n".join(out).rstrip())


async def scan_page(
    url: str, session: Session, pattern: str | None = None, context_lines: int = 0, max_matches: int = 200
) -> str:
    """Show a page's metadata and the lines matching a regular expression (case-insensitive), as L<n>: text.

    Args:
        url: The page URL, as a search result gave it.
        pattern: Regular expression to look for (case-insensitive); omit it for the metadata only.
        context_lines: Lines to show before and after each match (0 to 20).
        max_matches: Most matching lines to report (1 to 1000).
    """
    _check_count("context_lines", context_lines, 0, 20)
    _check_count("max_matches", max_matches, 1, 1000)
    regex = None
    if pattern is not None:
        if len(pattern) > MAX_PATTERN_CHARS:
            raise ResearchToolError(f"pattern is longer than {MAX_PATTERN_CHARS} characters")
        try:
            regex = re.compile(pattern, re.IGNORECASE)
        except re.error as exc:
            raise ResearchToolError(f"invalid regular expression {pattern!r}: {exc}") from None
    page = await session.open(url)
    out = _header(page)
    if regex is not None:
        lines = page.lines
        hits = [i for i, line in enumerate(lines) if regex.search(line)]
        shown = hits[:max_matches]
        out.append(
            f"Matches for /{pattern}/: {len(hits)}"
            + (f" (first {len(shown)} shown)" if len(shown) < len(hits) else "")
        )
        wanted = sorted(
            {
                j
                for i in shown
                for j in range(max(0, i - context_lines), min(len(lines), i + context_lines + 1))
            }
        )
        prev = None
        for n in wanted:
            if prev is not None and n > prev + 1:
                out.append("--")
            out.append(f"L{n}: {lines[n]}")
            prev = n
    return session.cut("\n".join(out))


async def open_lines(url: str, session: Session, lines: list[list[int]] | None = None) -> str:
    """Read a page as numbered lines: the whole page, or only the given 0-based inclusive line ranges.

    Args:
        url: The page URL, as a search result gave it.
        lines: Ranges [start, end] (0-based, inclusive), e.g. [[0, 20], [40, 45]]; omit for the whole page.
    """
    page = await session.open(url)
    text_lines = page.lines
    n = len(text_lines)
    if lines is None:
        numbers = list(range(n))
    else:
        if not lines:
            raise ResearchToolError("lines must hold at least one [start, end] range, or be omitted")
        spans: list[tuple[int, int]] = []
        for r in lines:
            if len(r) != 2:
                raise ResearchToolError(f"each range must be [start, end], not {r}")
            start, end = r
            if start < 0 or end < start:
                raise ResearchToolError(f"bad range {r}: need 0 <= start <= end")
            if start >= n:
                raise ResearchToolError(f"bad range {r}: the page has {n} lines (0 to {n - 1})")
            spans.append((start, min(end, n - 1)))
        merged: list[list[int]] = []
        for s, e in sorted(spans):
            if merged and s <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        numbers = []
        for i, (s, e) in enumerate(merged):
            if i:
                numbers.append(-1)
            numbers += range(s, e + 1)
    out = [f"Source: {page.url}", f"Title: {page.title}", f"Lines: {n}", ""]
    out += ["--" if k < 0 else f"L{k}: {text_lines[k]}" for k in numbers]
    return session.cut("\n".join(out))


async def finish(final_answer: str, session: Session) -> str:
    """Submit the final answer and end the task. Give only the answer itself, as short as possible.

    Args:
        final_answer: The answer to the question.
    """
    session.final_answer = final_answer
    session.state["final_answer"] = final_answer
    session.state.stop("finished")
    return f"Final answer recorded: {final_answer}"


# --- i3 preset -----------------------------------------------------------------------------------------
async def search(query: str, session: Session, num_results: int = 10) -> str:
    """Search the web; results are numbered from 0 so that click can open them.

    Args:
        query: The search query.
        num_results: Results to return (1 to 10).
    """
    query = query.strip()
    if not query:
        raise ResearchToolError("query must not be empty")
    _check_count("num_results", num_results, 1, MAX_RESULTS)
    hits = await session.search(query, num_results)
    session.last_results = hits
    out = [f"Results for: {query}"]
    out += _results_block(hits, start=0) if hits else ["No results."]
    return session.cut("\n".join(out))


async def _open_many(urls: list[str], session: Session) -> str:
    _check_count("the number of URLs", len(urls), 1, MAX_RESULTS)
    pages = await asyncio.gather(*(session.open(u) for u in urls), return_exceptions=True)
    failures = [p for p in pages if isinstance(p, BaseException)]
    for p in failures:
        if not isinstance(p, ResearchToolError):  # infra errors and bugs are not the model's to read
            raise p
    if len(failures) == len(pages):
        raise ResearchToolError("; ".join(str(f) for f in failures))
    blocks = []
    for url, page in zip(urls, pages, strict=True):
        if isinstance(page, BaseException):
            blocks.append(f"=== {url} ===\nError: {page}")
        else:
            blocks.append(f"=== {page.title} ===\nURL: {page.url}\n\n{page.text.strip()}")
    return session.cut("\n\n".join(blocks))


async def open(urls: list[str], session: Session) -> str:  # the i3 tool is called "open"
    """Open pages by URL and return their text.

    Args:
        urls: Page URLs (1 to 10), as search results gave them.
    """
    return await _open_many([u.strip() for u in urls], session)


async def click(result_indices: list[int], session: Session) -> str:
    """Open results of the last search by their numbers.

    Args:
        result_indices: Numbers of results of the last search (as shown, starting at 0).
    """
    if session.last_results is None:
        raise ResearchToolError("there are no search results to click yet: call search first")
    n = len(session.last_results)
    bad = [i for i in result_indices if not 0 <= i < n]
    if bad:
        valid = f"0 to {n - 1}" if n else "none: the last search found nothing"
        raise ResearchToolError(f"result index {bad[0]} is out of range (valid: {valid})")
    return await _open_many([session.last_results[i].url for i in result_indices], session)


PRESETS: dict[str, tuple[Any, ...]] = {
    "research": (search_web, scan_page, open_lines, finish),
    "i3": (search, open, click, finish),
}
