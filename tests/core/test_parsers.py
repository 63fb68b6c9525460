"""Parsers on ordinary and hostile inputs."""

from __future__ import annotations

import time

import pytest

from verifiers.parsers import MaybeThinkParser, Parser, ThinkParser, XMLParser, extract_boxed_answer


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (r"so \boxed{42}", "42"),
        (r"\boxed{1} then \boxed{2}", "2"),
        (r"\boxed{\frac{1}{2}}", r"\frac{1}{2}"),
        (r"\boxed{\left\{1,2\right\}}", r"\left\{1,2\right\}"),
        (r"\boxed{ {a}{b} }", "{a}{b}"),
        (r"\fbox{7}", "7"),
        (r"\boxed {x+1}", "x+1"),
        (r"\boxed{3} and an unclosed \boxed{4", "3"),
        (r"\boxed 5", "5"),
        (r"$\boxed{\sqrt{2}}$ vs \boxed{", r"\sqrt{2}"),
        (r"\boxed{\boxed{9}}", "9"),  # the last box opened wins
        ("no box here", None),
        (r"\boxed{unclosed", None),
    ],
)
def test_extract_boxed(text: str, expected: str | None) -> None:
    assert extract_boxed_answer(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "{" * 100_000,
        "\\boxed{" * 20_000,
        "}" * 100_000 + "\\boxed{1",
        ("\\boxed{" + "{" * 50) * 2_000,
    ],
)
def test_extract_boxed_hostile_inputs_are_fast(text: str) -> None:
    t0 = time.perf_counter()
    assert extract_boxed_answer(text) is None
    assert time.perf_counter() - t0 < 0.5


def test_extract_boxed_deep_nesting_is_matched() -> None:
    inner = "{" * 5000 + "x" + "}" * 5000
    assert extract_boxed_answer("\\boxed{" + inner + "}") == inner


def test_parser_parse_answer_uses_last_assistant_message() -> None:
    p = Parser(extract_boxed_answer)
    completion = [
        {"role": "assistant", "content": r"\boxed{1}"},
        {"role": "user", "content": r"\boxed{99}"},
        {"role": "assistant", "content": r"final \boxed{2}"},
    ]
    assert p.parse_answer(completion) == "2"
    assert p.parse_answer([]) is None
    assert p.parse_answer("plain string \\boxed{3}") == "3"


def test_xml_parser_fields_alternatives_and_all_occurrences() -> None:
    p = XMLParser(["think", ("answer", "final")])
    text = "<think>a</think><answer>1</answer> noise <final>2</final>"
    parsed = p.parse(text)
    assert parsed.think == "a" and parsed.answer == "2"
    assert p.parse_all(text) == {"think": ["a"], "answer": ["1", "2"]}
    assert p.parse("<think>x</think>").answer is None
    assert p.parse_answer([{"role": "assistant", "content": "<answer> 7 </answer>"}]) == "7"
    assert p.format(think="t", final="f") == "<think>\nt\n</think>\n<answer>\nf\n</answer>"


def test_xml_parser_rejects_bad_fields() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        XMLParser(["a", "a"])
    with pytest.raises(ValueError, match="answer_field"):
        XMLParser(["think"])
    with pytest.raises(ValueError):
        XMLParser(["not a tag"])


def test_xml_parser_hostile_inputs_are_fast() -> None:
    p = XMLParser(["think", "answer"])
    for text in (
        "<answer>" * 50_000,
        "<answer>x" + "</answer" * 30_000,
        "<think>" * 10_000 + "</think>" * 10_000,
    ):
        t0 = time.perf_counter()
        p.parse(text)
        assert time.perf_counter() - t0 < 0.5


def test_xml_format_reward() -> None:
    p = XMLParser(["think", "answer"])
    reward = p.get_format_reward_func()
    good = {"role": "assistant", "content": "<think>x</think><answer>1</answer>"}
    bad = {"role": "assistant", "content": "<answer>1</answer><answer>2</answer>"}
    assert reward([good, good]) == 1.0
    assert reward([good, bad]) == 0.5
    assert reward([]) == 0.0


def test_think_parser_is_strict() -> None:
    p = ThinkParser(extract_boxed_answer)
    assert p.parse(r"<think>hmm</think> \boxed{3}") == "3"
    assert p.parse(r"<think>still thinking \boxed{3}") is None  # unclosed think yields nothing
    assert p.parse(r"\boxed{3}") is None  # no think block at all
    assert p.parse(r"<think>a</think> x <think> \boxed{4}") is None
    assert p.follows_format(r"<think>a</think>\boxed{1}")
    assert not p.follows_format(r"<think>a</think><think>b</think>\boxed{1}")


def test_maybe_think_parser() -> None:
    p = MaybeThinkParser(extract_boxed_answer)
    assert p.parse(r"\boxed{3}") == "3"
    assert p.parse(r"<think>\boxed{1}</think> \boxed{3}") == "3"
    assert p.parse(r"<think>cut off \boxed{3}") is None
