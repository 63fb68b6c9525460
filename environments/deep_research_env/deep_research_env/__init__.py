"""deep-research-env: multi-hop questions answered by searching and reading, offline or on the real web.

``load_environment()`` gives the offline default: the bundled fictional encyclopedia (BM25 over SQLite
FTS5) and its bundled multi-hop questions, with the ``research`` tools. See README.md.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import Field, validate_call

import verifiers as vf
from deep_research_env.backends import (
    DEFAULT_CACHE_TTL,
    SERPER_URL,
    Backend,
    DiskCache,
    LocalBackend,
    PageFetcher,
    ResearchToolError,
    SearchUnavailableError,
    SerperBackend,
)
from deep_research_env.corpus import ONLINE_HINT, Page, bundled_pages, bundled_questions, load_directory
from deep_research_env.env import DeepResearchEnv
from deep_research_env.index import BM25Index
from deep_research_env.scoring import JUDGE_PROMPT, DeepResearchRubric

__all__ = [
    "BM25Index",
    "DeepResearchEnv",
    "DeepResearchRubric",
    "DiskCache",
    "LocalBackend",
    "Page",
    "PageFetcher",
    "ResearchToolError",
    "SearchUnavailableError",
    "SerperBackend",
    "load_environment",
]

DEEPDIVE_DATASET = "zai-org/DeepDive"
BUNDLED = "bundled"
DEEPDIVE = "deepdive"

SYSTEM_PROMPTS = {
    "research": (
        "You answer questions by researching them. Use search_web to find pages, scan_page to find the "
        "relevant lines of a page and open_lines to read them. Facts are often spread over several pages: "
        "follow the names each page gives you. When you know the answer, call finish with only the answer."
    ),
    "i3": (
        "You answer questions by researching them. Use search to find pages, click or open to read them. "
        "Facts are often spread over several pages: follow the names each page gives you. When you know "
        "the answer, call finish with only the answer."
    ),
}


def _records(source: str, split: str) -> Callable[[], Any]:
    def build() -> Any:
        if source == BUNDLED:
            return [{"question": q["question"], "answer": q["answer"], "info": {"hops": q["hops"],
                     "template": q["template"]}} for q in bundled_questions()]  # fmt: skip
        if source == DEEPDIVE:
            return vf.data.hf_records(DEEPDIVE_DATASET, None, split=split, install_hint=ONLINE_HINT)
        return vf.data.read_records(source)

    return build


def _dataset(source: str, split: str, num_examples: int) -> Callable[[], vf.data.Rows]:
    kind = vf.data.source_kind(source, [BUNDLED, DEEPDIVE])
    if kind == vf.data.INTELLECT3:
        raise ValueError("INTELLECT-3's RL data has no deep-research subset; use source='deepdive'")
    records = _records(source, split)

    def convert(record: Any, index: int) -> dict[str, Any]:
        question, answer, info = vf.data.qa_fields(record, index)
        info.pop("conversations", None)  # DeepDive's SFT trajectories: large, and not needed to score
        return {
            "example_id": index,
            "question": question,
            "answer": answer,
            "info": info,
            "task": "deep-research",
        }

    return lambda: vf.data.rows_in_range(records(), convert, limit=num_examples)


def _backend(
    backend: str,
    *,
    corpus_dir: str | None,
    serper_api_key_var: str,
    serper_url: str,
    cache_dir: str | None,
    cache_ttl: float,
    fetch_timeout: float,
    max_page_bytes: int,
    max_redirects: int,
    search_retries: int,
) -> Backend:
    if backend == "local":
        pages = load_directory(corpus_dir) if corpus_dir else bundled_pages()
        return LocalBackend(BM25Index(pages))
    if corpus_dir:
        raise ValueError("corpus_dir is only used with backend='local'")
    key = os.environ.get(serper_api_key_var, "")
    if not key:
        raise ValueError(f"backend='serper' needs a Serper API key in ${serper_api_key_var}")
    cache = DiskCache(cache_dir, cache_ttl)
    fetcher = PageFetcher(cache, timeout=fetch_timeout, max_bytes=max_page_bytes, max_redirects=max_redirects)
    return SerperBackend(
        api_key=key, cache=cache, fetcher=fetcher, endpoint=serper_url, max_retries=search_retries
    )


@validate_call  # JSON from `vf-eval -a` is checked and coerced here, at the boundary
def load_environment(
    source: str = BUNDLED,
    *,
    tools: Literal["research", "i3"] = "research",
    backend: Literal["local", "serper"] = "local",
    corpus_dir: str | None = None,
    split: str = "qa_rl",
    num_examples: int = -1,
    max_turns: Annotated[int, Field(ge=1)] = 32,
    max_output_chars: Annotated[int, Field(ge=100)] = 8000,
    system_prompt: str | None = None,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    judge_api_key_var: str | None = None,
    redundancy_penalty: Annotated[float, Field(ge=0)] = 0.0,
    serper_api_key_var: str = "SERPER_API_KEY",
    serper_url: str = SERPER_URL,
    cache_dir: str | None = None,
    cache_ttl: Annotated[float, Field(ge=0)] = DEFAULT_CACHE_TTL,
    fetch_timeout: Annotated[float, Field(gt=0)] = 15.0,
    max_page_bytes: Annotated[int, Field(ge=1000)] = 5_000_000,
    max_redirects: Annotated[int, Field(ge=0)] = 5,
    search_retries: Annotated[int, Field(ge=0)] = 3,
    timeout: Annotated[float, Field(gt=0)] | None = None,
) -> DeepResearchEnv:
    """The deep-research environment.

    Args:
        source: ``"bundled"`` (questions over the bundled corpus), ``"deepdive"`` (``zai-org/DeepDive``,
            via ``datasets``; online) or a ``.jsonl`` / ``.json`` file with ``question`` and ``answer``.
        tools: ``"research"`` (search_web, scan_page, open_lines, finish) or ``"i3"`` (search, open,
            click, finish).
        backend: ``"local"`` (BM25 over the bundled corpus or ``corpus_dir``) or ``"serper"`` (the web).
        corpus_dir: a directory of .md / .txt / .html files to search instead of the bundled corpus.
        split: the DeepDive split (``qa_rl``).
        num_examples: keep the first ``num_examples`` questions (-1: all).
        max_turns: model turns per rollout.
        max_output_chars: every tool output is cut at this many characters, with a marker.
        system_prompt: replaces the preset's instructions.
        judge_model, judge_base_url, judge_api_key_var: an LLM judge (yes/no) gives the reward;
            without them the offline exact / contains match does.
        redundancy_penalty: weight of ``-query_redundancy`` in the reward (0: a metric only).
        serper_api_key_var, serper_url: where the Serper key lives and the search endpoint.
        cache_dir, cache_ttl: disk cache of searches and pages (serper backend); ``cache_ttl=0`` disables it.
        fetch_timeout, max_page_bytes, max_redirects: bounds on fetching a web page.
        search_retries: retries of a failing Serper request before the rollout stops as an infra error.
        timeout: wall-clock budget per rollout in seconds.
    """
    dataset = _dataset(source, split, num_examples)
    judge = None
    if judge_model is not None or judge_base_url is not None:
        judge = vf.JudgeRubric(
            judge_model=judge_model or "gpt-4.1-mini",
            judge_base_url=judge_base_url or "https://api.openai.com/v1",
            judge_api_key_var=judge_api_key_var or "OPENAI_API_KEY",
            judge_prompt=JUDGE_PROMPT,
        )
    chosen = _backend(
        backend,
        corpus_dir=corpus_dir,
        serper_api_key_var=serper_api_key_var,
        serper_url=serper_url,
        cache_dir=cache_dir,
        cache_ttl=cache_ttl,
        fetch_timeout=fetch_timeout,
        max_page_bytes=max_page_bytes,
        max_redirects=max_redirects,
        search_retries=search_retries,
    )
    return DeepResearchEnv(
        backend=chosen,
        preset=tools,
        max_output_chars=max_output_chars,
        eval_dataset=dataset,
        system_prompt=system_prompt if system_prompt is not None else SYSTEM_PROMPTS[tools],
        rubric=DeepResearchRubric(judge=judge, redundancy_penalty=redundancy_penalty),
        max_turns=max_turns,
        timeout=timeout,
        task="deep-research",
    )
