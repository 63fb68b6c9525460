"""Multiple choice: the seeded option shuffle (a function of question, seed and rollout only, the same in
another process) and the letter a reply commits to (golden forms, and adversarial ones that must read no
letter or the right one: the pronoun "I", an article "A", a distractor in passing, letters beyond the
question's options, cut-off reasoning)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.rubrics.helpers import make_state
from verifiers.data.choices import LETTERS, choice_order, format_choices, letters_for, shuffle_choices
from verifiers.parsers.choice import LETTERS as PARSER_LETTERS, extract_choice_letter
from verifiers.rubrics import MultipleChoiceRubric
from verifiers.types import State


def test_parser_and_data_agree_on_the_letters() -> None:
    assert PARSER_LETTERS == LETTERS == "ABCDEFGHIJ"


# --- the shuffle ---------------------------------------------------------------------------------------
def test_choice_order_is_a_permutation_fixed_by_its_inputs() -> None:
    orders = {tuple(choice_order("rec1", 0, r, 4)) for r in range(40)}
    assert all(sorted(o) == [0, 1, 2, 3] for o in orders)
    assert len(orders) > 6  # rollouts see different orders
    assert choice_order("rec1", 0, 3, 4) == choice_order("rec1", 0, 3, 4)
    assert any(choice_order("rec1", 1, r, 4) != choice_order("rec1", 0, r, 4) for r in range(8))
    assert any(choice_order("rec2", 0, r, 4) != choice_order("rec1", 0, r, 4) for r in range(8))


def test_choice_order_is_the_same_in_another_process() -> None:
    """No dependence on hash seeds or ``random``'s algorithm: a fresh interpreter computes the same order."""
    code = "from verifiers.data.choices import choice_order; print([choice_order('q7', 5, r, 10) for r in range(3)])"
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONHASHSEED": "123"},
    ).stdout
    assert out.strip() == str([choice_order("q7", 5, r, 10) for r in range(3)])


def test_shuffle_choices_tracks_the_correct_option() -> None:
    options = ["right", "wrong 1", "wrong 2", "wrong 3"]
    letters_seen = set()
    for r in range(30):
        shown = shuffle_choices(options, 0, key="rec9", seed=0, rollout_index=r)
        assert sorted(shown.options) == sorted(options)
        assert shown.options[LETTERS.index(shown.answer)] == "right"
        assert [options[i] for i in shown.order] == list(shown.options)
        assert shown.info() == {"choice_order": list(shown.order), "answer_letter": shown.answer}
        letters_seen.add(shown.answer)
    assert letters_seen == {"A", "B", "C", "D"}  # the correct answer is not always first


def test_option_limits() -> None:
    assert letters_for(10) == "ABCDEFGHIJ"
    with pytest.raises(ValueError, match="1 to 10 options"):
        letters_for(11)
    with pytest.raises(ValueError, match="correct option 4"):
        shuffle_choices(["a", "b"], 4, key=1, seed=0, rollout_index=0)
    assert format_choices(["x", " y "], style="{letter}. {option}") == "A. x\nB. y"


# --- the letter a reply commits to --------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("Long reasoning.\n\n\\boxed{C}", "C"),
        ("So \\boxed{\\text{B}}.", "B"),
        ("\\boxed{(D)}", "D"),
        ("\\boxed{C) Argon}", "C"),
        ("Reasoning...\nAnswer: C", "C"),
        ("The answer is (C).", "C"),
        ("the correct answer is option B.", "B"),
        ("**Final answer:** D", "D"),
        ("**Answer:** A", "A"),
        ("Final Answer: I", "I"),  # "I" as the option letter, standing alone
        ("Answer: I think it is B.", "B"),  # never the pronoun
        ("(A) looks plausible and so does (B).\nAnswer: D", "D"),
        ("First I thought Answer: A, but on reflection the answer is B.", "B"),  # the last statement wins
        ("After all that, it must be **C**.", "C"),
        ("Step 1 ...\nStep 2 ...\n(B)", "B"),
        ("<think>Answer: A</think>\nAnswer: B", "B"),
        ("The answer is J.", "J"),
    ],
)
def test_golden_forms(text: str, letter: str) -> None:
    assert extract_choice_letter(text) == letter


@pytest.mark.parametrize(
    "text",
    [
        "I think the second option is the most convincing one.",  # the pronoun
        "A good case can be made for several options here.",  # the article
        "Answer: A good case can be made for several options.",
        "(B) is tempting, but it ignores the boundary condition.",  # a distractor in passing
        "Options B and C both have merit; I cannot decide.",
        "Not sure.",
        "",
        "\\boxed{42}",  # a box that is no letter
    ],
)
def test_adversarial_replies_commit_to_no_letter(text: str) -> None:
    assert extract_choice_letter(text) is None


def test_only_the_questions_own_letters_count() -> None:
    assert extract_choice_letter("Answer: E", "ABCD") is None
    assert extract_choice_letter("Answer: E", "ABCDE") == "E"
    with pytest.raises(ValueError, match="letters must be"):
        extract_choice_letter("Answer: A", "AZ")


def state(text: str, answer: str, letters: str = "ABCD", truncated: bool = False) -> State:
    s = make_state(text, answer)
    s["info"] = {"letters": letters}
    s["is_truncated"] = truncated
    return s


async def test_rubric_reward_unparsed_and_truncated() -> None:
    rubric = MultipleChoiceRubric()
    cases = [
        state("Answer: B", "B"),
        state("Answer: C", "B"),
        state("I would not know.", "B"),
        state("<think>Answer: B ... let me check again", "B"),  # unclosed think: nothing is read
        state("Answer: B", "B", truncated=True),  # cut at max_tokens: counted as truncated
    ]
    for s in cases:
        await rubric.score_rollout(s)
    assert [s["reward"] for s in cases] == [1.0, 0.0, 0.0, 0.0, 1.0]
    assert [s["metrics"]["unparsed"] for s in cases] == [0.0, 0.0, 1.0, 1.0, 0.0]
    assert [s["metrics"]["truncated"] for s in cases] == [0.0, 0.0, 0.0, 1.0, 1.0]


async def test_a_reference_that_is_no_option_is_a_scoring_error() -> None:
    s = state("Answer: B", "E", letters="ABCD")
    await MultipleChoiceRubric().score_rollout(s)
    assert s["reward"] is None and s["error"]["category"] == "scoring"
    assert "not one of the options ABCD" in s["error"]["message"]
