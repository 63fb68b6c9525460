"""``JudgeRubric``: an LLM judge, over any OpenAI-compatible endpoint, decides whether a response matches
the reference answer.

* The prompt is a template with ``{question}``, ``{answer}`` and ``{response}`` (only these three are
  substituted, in one pass, so LaTeX braces in the template or in the answers are left alone).
* Verdicts: ``"yes_no"`` (the judge says yes or no) or ``"abc"``, the CompassVerifier grading scheme
  (A = correct, B = incorrect, C = invalid response; ``\\boxed{A}`` is accepted and preferred).
* A judge that cannot be reached after the client's retries raises ``JudgeUnavailableError``: the
  rollout gets an *infra* error (a trainer can mask it), never a silent 0. A reply that holds no verdict
  is a ``ScoringError``.
* Verdicts are cached per rendered prompt, i.e. per (question, answer, response); concurrent identical
  requests share one call.
"""

from __future__ import annotations

import asyncio
import functools
import os
import re
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from verifiers._urls import redact_url
from verifiers.clients.client import Client
from verifiers.clients.sampling import merge_sampling_args
from verifiers.errors import JudgeUnavailableError, ScoringError, VerifiersError
from verifiers.parsers.parser import Parser, question_text
from verifiers.parsers.think import MaybeThinkParser
from verifiers.rubrics.rubric import Rubric, Score
from verifiers.types import Messages, SamplingArgs

VerdictFormat = Literal["yes_no", "abc"]

DEFAULT_JUDGE_MODEL = "gpt-4.1-mini"
DEFAULT_JUDGE_BASE_URL = "https://api.openai.com/v1"
DEFAULT_JUDGE_API_KEY_VAR = "OPENAI_API_KEY"

YES_NO_PROMPT = """You are checking a student's final answer against the reference answer.

Question:
{question}

Reference answer:
{answer}

Student's response:
{response}

Decide only whether the student's final answer means the same as the reference answer. Equivalent \
notation, ordering, simplification, or rounding consistent with the question counts as the same; \
a different value, an extra or missing part, or no clear final answer does not. Reply with a single \
word: yes or no."""

ABC_PROMPT = """Grade a response to a question by comparing its final answer with the reference answer.

Question:
{question}

Reference answer:
{answer}

Response:
{response}

Choose one grade:
A: CORRECT - the final answer is equivalent to the reference answer (notation and form may differ).
B: INCORRECT - the final answer differs from the reference answer, or is only partly right.
C: INVALID - the response is cut off, repeats itself, refuses, or states no final answer.

Give the letter of the grade inside \\boxed{{}}, for example \\boxed{{A}}, and nothing else."""

_TOKEN = re.compile(r"\{\{|\}\}|\{(question|answer|response)\}")
_BOXED_LETTER = re.compile(r"\\boxed\s*\{\s*(?:\\text\{\s*)?([A-Ca-c])\s*\}?\s*\}")
_LEAD_LETTER = re.compile(r"^\W*(?:(?i:grade)\W*)?([ABC])\b")
_WORD = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def render_prompt(template: str, *, question: str, answer: str, response: str) -> str:
    """Substitute the three placeholders in one pass; in the template (not in the values) ``{{`` and
    ``}}`` stand for literal braces, as in ``str.format`` templates."""
    values = {"question": question, "answer": answer, "response": response}

    def sub(m: re.Match[str]) -> str:
        tok = m.group(0)
        return tok[0] if tok in ("{{", "}}") else values[m.group(1)]

    return _TOKEN.sub(sub, template)


def _after_think(text: str) -> str:
    # Reasoning judges think first; the verdict is what follows the last closed think block.
    end = text.rfind("</think>")
    return text[end + len("</think>") :] if end >= 0 else text


def parse_verdict(text: str, verdict_format: VerdictFormat) -> tuple[str, bool] | None:
    """``(label, correct)`` from a judge reply, or ``None`` when it holds no clear verdict."""
    body = _after_think(text).strip()
    if verdict_format == "abc":
        boxed = _BOXED_LETTER.findall(body)
        letter = boxed[-1].upper() if boxed else None
        if letter is None:
            m = _LEAD_LETTER.match(body)
            letter = m.group(1) if m else None
        if letter is None:
            return None
        return letter, letter == "A"
    if "\\boxed" in body:
        inner = re.findall(r"\\boxed\s*\{\s*(?:\\text\{)?\s*(yes|no)\b", body, re.IGNORECASE)
        if inner:
            word = inner[-1].lower()
            return word, word == "yes"
    first = re.match(r"^\W*(yes|no)\b", body, re.IGNORECASE)
    if first:
        word = first.group(1).lower()
        return word, word == "yes"
    words = {w.lower() for w in _WORD.findall(body)}
    if len(words) == 1:  # exactly one of yes / no occurs, however often
        word = words.pop()
        return word, word == "yes"
    return None


@dataclass(frozen=True, slots=True)
class JudgeVerdict:
    """A judge's decision: ``label`` (``yes``/``no`` or ``A``/``B``/``C``), ``correct``, the raw reply."""

    label: str
    correct: bool
    raw: str
    cached: bool = False

    @property
    def invalid(self) -> bool:
        return self.label == "C"


class JudgeRubric(Rubric):
    """Reward ``judge_correct``: 1.0 when the judge accepts the response, else 0.0.

    Args:
        parser: what the judge sees as the response; default: the final message after any closed
            think block (an unclosed ``<think>`` scores 0 without calling the judge).
        judge_client: a ready ``Client``; otherwise one is made from ``judge_base_url`` and the API key
            in the environment variable ``judge_api_key_var`` (unset variable: no key sent).
        judge_model: model name sent to the judge endpoint.
        judge_prompt: template with ``{question}``, ``{answer}``, ``{response}``; defaults to a yes/no
            or an A/B/C prompt according to ``verdict_format``.
        judge_sampling_args: extra request fields (default ``temperature=0``).
        max_retries: judge request retries before ``JudgeUnavailableError``.
        cache_size: verdicts kept (LRU).
    """

    def __init__(
        self,
        parser: Parser | None = None,
        *,
        judge_client: Client | None = None,
        judge_model: str = DEFAULT_JUDGE_MODEL,
        judge_base_url: str = DEFAULT_JUDGE_BASE_URL,
        judge_api_key_var: str | None = DEFAULT_JUDGE_API_KEY_VAR,
        judge_prompt: str | None = None,
        verdict_format: VerdictFormat = "yes_no",
        judge_sampling_args: SamplingArgs | None = None,
        max_retries: int = 3,
        request_timeout: float = 120.0,
        cache_size: int = 100_000,
        weight: float = 1.0,
    ) -> None:
        if verdict_format not in ("yes_no", "abc"):
            raise ValueError(f"verdict_format must be 'yes_no' or 'abc', not {verdict_format!r}")
        template = judge_prompt or (ABC_PROMPT if verdict_format == "abc" else YES_NO_PROMPT)
        if "{response}" not in template:
            raise ValueError("judge_prompt must contain the {response} placeholder")
        super().__init__(parser=parser or MaybeThinkParser())
        self.parser_is_default = parser is None
        self.judge_model = judge_model
        self.judge_prompt = template
        self.verdict_format: VerdictFormat = verdict_format
        self.judge_sampling_args: SamplingArgs = (
            {"temperature": 0.0} if judge_sampling_args is None else merge_sampling_args(judge_sampling_args)
        )
        self._client = judge_client
        self._owns_client = judge_client is None
        self._base_url = judge_base_url
        self._api_key_var = judge_api_key_var
        self._max_retries = max_retries
        self._request_timeout = request_timeout
        self.cache_size = cache_size
        self._cache: OrderedDict[str, JudgeVerdict] = OrderedDict()
        self._inflight: dict[str, asyncio.Task[JudgeVerdict]] = {}
        #: Judge requests actually sent (cache hits and shared in-flight calls excluded).
        self.requests = 0
        self.add_reward_func(self.judge_correct, weight)

    # --- lifecycle ---------------------------------------------------------------------------------
    @property
    def client(self) -> Client:
        """The judge client (made on first use when none was given: nothing to start in ``setup``)."""
        if self._client is None:
            key = os.environ.get(self._api_key_var) if self._api_key_var else None
            self._client = Client(
                self._base_url, key, max_retries=self._max_retries, timeout=self._request_timeout
            )
        return self._client

    async def teardown(self) -> None:
        if self._owns_client and self._client is not None:
            await self._client.aclose()

    # --- judging -----------------------------------------------------------------------------------
    async def judge(self, *, question: str, answer: str, response: str) -> JudgeVerdict:
        """Ask the judge whether ``response`` answers ``question`` as ``answer`` does.

        Raises ``JudgeUnavailableError`` (infra) when the judge cannot be reached, ``ScoringError`` when
        its reply holds no verdict.
        """
        prompt = render_prompt(self.judge_prompt, question=question, answer=answer, response=response)
        hit = self._cache.get(prompt)
        if hit is not None:
            self._cache.move_to_end(prompt)
            return replace(hit, cached=True)
        loop = asyncio.get_running_loop()
        task = self._inflight.get(prompt)
        shared = task is not None and task.get_loop() is loop and not task.done()
        if not shared:
            task = loop.create_task(self._ask(prompt))
            self._inflight[prompt] = task
            task.add_done_callback(functools.partial(self._finished, prompt))
        assert task is not None
        verdict = await asyncio.shield(task)  # a cancelled caller leaves the call to the others
        return replace(verdict, cached=True) if shared else verdict

    def _finished(self, prompt: str, task: asyncio.Task[JudgeVerdict]) -> None:
        if self._inflight.get(prompt) is task:
            del self._inflight[prompt]
        if task.cancelled() or task.exception() is not None:
            return
        self._cache[prompt] = task.result()
        if len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)

    async def _ask(self, prompt: str) -> JudgeVerdict:
        self.requests += 1
        try:
            resp = await self.client.chat(
                self.judge_model,
                [{"role": "user", "content": prompt}],
                sampling_args=self.judge_sampling_args,
            )
        except VerifiersError as exc:
            where = ", ".join(redact_url(u) for u in self.client.base_urls)
            raise JudgeUnavailableError(
                f"judge {self.judge_model!r} at {where} gave no verdict: {type(exc).__name__}: {exc}"
            ) from exc
        parsed = parse_verdict(resp.text, self.verdict_format)
        if parsed is None:
            raise ScoringError(
                f"the judge's reply holds no {self.verdict_format} verdict: {resp.text[:200]!r}"
            )
        label, correct = parsed
        return JudgeVerdict(label, correct, resp.text)

    # --- reward ------------------------------------------------------------------------------------
    async def judge_correct(
        self, prompt: Messages | str, completion: Messages | str, answer: str, info: dict[str, Any]
    ) -> Score:
        response = self.parser.parse_answer(completion)
        return await self.score_response(
            response=response, answer=answer, question=question_text(prompt, info), info=info or {}
        )

    async def score_response(
        self, *, response: str | None, answer: str, question: str, info: Mapping[str, Any]
    ) -> Score:
        metrics = {"parsed": 0.0, "judge_invalid": 0.0}
        if response is None or not response.strip():
            return Score(0.0, metrics)
        metrics["parsed"] = 1.0
        verdict = await self.judge(question=question, answer=str(answer), response=response)
        metrics["judge_invalid"] = 1.0 if verdict.invalid else 0.0
        return Score(1.0 if verdict.correct else 0.0, metrics)


def judge_from_args(
    *,
    judge_model: str | None = None,
    judge_base_url: str | None = None,
    judge_api_key_var: str | None = None,
    verdict_format: VerdictFormat = "yes_no",
) -> JudgeRubric | None:
    """The judge an environment's ``judge_*`` arguments ask for: ``None`` unless a model or a URL is
    given; an argument left ``None`` keeps ``JudgeRubric``'s default."""
    if judge_model is None and judge_base_url is None:
        return None
    return JudgeRubric(
        judge_model=DEFAULT_JUDGE_MODEL if judge_model is None else judge_model,
        judge_base_url=DEFAULT_JUDGE_BASE_URL if judge_base_url is None else judge_base_url,
        judge_api_key_var=DEFAULT_JUDGE_API_KEY_VAR if judge_api_key_var is None else judge_api_key_var,
        verdict_format=verdict_format,
    )
