"""Reward and metrics: an LLM judge when one is configured, else normalised exact / contains matching;
token F1 and query redundancy as metrics."""

from __future__ import annotations

import itertools
import re
import string
from typing import Any

import verifiers as vf
from deep_research_env.index import tokens

JUDGE_PROMPT = """You are grading the final answer of a research assistant.

Question:
{question}

Reference answer:
{answer}

Assistant's final answer:
{response}

Does the assistant's final answer give the same answer as the reference answer? Different wording, \
spelling of numbers or extra context do not matter; a different or missing answer, or several \
candidate answers, do. Reply with one word: yes or no."""

_NUMBER_WORDS = {w: str(i) for i, w in enumerate(
    ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"]
)}  # fmt: skip
_ARTICLES = frozenset({"a", "an", "the"})
_PUNCT = re.compile(f"[{re.escape(string.punctuation)}‘’“”–—]")


def normalize(text: str) -> list[str]:
    """Lower case, numbers normalised (``1,742`` → ``1742``, ``3.0`` → ``3``, ``seven`` → ``7``),
    punctuation and articles dropped; returns the tokens."""
    text = text.lower()
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)  # thousands separators
    text = re.sub(r"\b(\d+)\.0+\b", r"\1", text)
    text = _PUNCT.sub(" ", text)
    return [_NUMBER_WORDS.get(t, t) for t in text.split() if t not in _ARTICLES]


def _contains(haystack: list[str], needle: list[str]) -> bool:
    n = len(needle)
    return n > 0 and any(haystack[i : i + n] == needle for i in range(len(haystack) - n + 1))


def match(response: str, answer: str) -> tuple[bool, bool]:
    """``(exact, contains)``. ``contains`` only counts for short answers (at most ``4 × answer + 12``
    tokens), so listing many candidates does not pay."""
    got, gold = normalize(response), normalize(answer)
    exact = bool(gold) and got == gold
    return exact, exact or (len(got) <= 4 * len(gold) + 12 and _contains(got, gold))


def token_f1(response: str, answer: str) -> float:
    got, gold = normalize(response), normalize(answer)
    if not got or not gold:
        return 0.0
    common = sum(min(got.count(t), gold.count(t)) for t in set(gold))
    if common == 0:
        return 0.0
    p, r = common / len(got), common / len(gold)
    return 2 * p * r / (p + r)


def query_redundancy(queries: list[str]) -> float:
    """Mean pairwise Jaccard similarity of the queries' token sets (0 with fewer than two queries)."""
    sets = [set(tokens(q)) for q in queries]
    pairs = list(itertools.combinations(sets, 2))
    if not pairs:
        return 0.0
    return sum(len(a & b) / len(a | b) if a | b else 1.0 for a, b in pairs) / len(pairs)


def final_answer(state: vf.State) -> str:
    """The answer given to ``finish``; without one, the last assistant message after any think block."""
    answer = state.get("final_answer")
    if isinstance(answer, str):
        return answer
    for msg in reversed(state.get("completion") or []):
        text = msg.get("content")
        if msg.get("role") == "assistant" and isinstance(text, str) and text.strip():
            return text[text.rfind("</think>") + len("</think>") :] if "</think>" in text else text
    return ""


class DeepResearchRubric(vf.Rubric):
    """Reward ``correct`` (judge verdict, or the offline match); metrics ``exact_match``,
    ``contains_match``, ``token_f1``, ``finished``, ``query_redundancy`` (weight ``-redundancy_penalty``)."""

    def __init__(self, *, judge: vf.JudgeRubric | None = None, redundancy_penalty: float = 0.0) -> None:
        super().__init__()
        self.judge = judge
        self.add_reward_func(self.correct, 1.0)
        self.add_reward_func(self.token_f1, 0.0)
        self.add_reward_func(self.query_redundancy, -redundancy_penalty)

    async def setup(self) -> None:
        if self.judge is not None:
            await self.judge.setup()

    async def teardown(self) -> None:
        if self.judge is not None:
            await self.judge.teardown()

    async def correct(self, state: vf.State, answer: str, info: dict[str, Any], prompt: Any) -> vf.Score:
        response = final_answer(state).strip()
        exact, contains = match(response, answer) if response else (False, False)
        metrics = {
            "exact_match": float(exact),
            "contains_match": float(contains),
            "finished": float(isinstance(state.get("final_answer"), str)),
        }
        if self.judge is None:
            return vf.Score(float(contains), metrics)
        if not response:
            return vf.Score(0.0, metrics)
        question = str((info or {}).get("question") or vf.rubrics.question_text(prompt, info))
        # Keyword arguments: the reference and the model's answer can never trade slots.
        verdict = await self.judge.judge(question=question, answer=str(answer), response=response)
        return vf.Score(1.0 if verdict.correct else 0.0, metrics)

    def token_f1(self, state: vf.State, answer: str) -> float:
        return token_f1(final_answer(state), answer)

    def query_redundancy(self, state: vf.State) -> float:
        return query_redundancy(list(state.get("search_queries") or []))
