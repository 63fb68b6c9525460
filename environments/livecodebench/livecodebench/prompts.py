"""The prompt of LiveCodeBench's code-generation scenario, as its runner builds it for chat models.

LiveCodeBench's ``lcb_runner`` (``prompts/code_generation.py``, the generic chat template used for OpenAI-style
chat models) sends a system message and one user message: the problem under ``### Question:``, then
``### Format:`` with one of two instructions — complete the given starter code (LeetCode problems carry
one), or read stdin and write stdout (AtCoder and Codeforces) — then ``### Answer:``. The texts below are
that template's, character for character, since a prompt that differs changes the score.
"""

from __future__ import annotations

SYSTEM_PROMPT = (
    "You are an expert Python programmer. You will be given a question (problem specification) and will "
    "generate a correct Python program that matches the specification and passes all tests."
)
WITH_STARTER_CODE = (
    "You will use the following starter code to write the solution to the problem and enclose your code "
    "within delimiters."
)
WITHOUT_STARTER_CODE = (
    "Read the inputs from stdin solve the problem and write the answer to stdout (do not directly test on "
    "the sample inputs). Enclose your code within delimiters as follows. Ensure that when the python program "
    "runs, it reads the inputs, runs the algorithm and writes output to STDOUT."
)
ANSWER_LINE = "### Answer: (use the provided format with backticks)"


def user_prompt(question_content: str, starter_code: str) -> str:
    """The user message for one problem (``starter_code`` empty: the stdin/stdout form)."""
    if starter_code:
        instruction, code = WITH_STARTER_CODE, starter_code
    else:
        instruction, code = WITHOUT_STARTER_CODE, "# YOUR CODE HERE"
    return (
        f"### Question:\n{question_content}\n\n"
        f"### Format: {instruction}\n```python\n{code}\n```\n\n"
        f"{ANSWER_LINE}\n\n"
    )
