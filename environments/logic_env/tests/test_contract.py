"""The contract every task family keeps (reasoning-gym style), run over every generator:

- the stored answer scores 1, and so does every other valid answer the family's solver finds;
- another item's answer scores 0 unless it really solves this item;
- hostile answers score 0, fast, without executing anything.
"""

from __future__ import annotations

import builtins
import functools
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from logic_env.tasks import DIFFICULTIES, TASK_NAMES, Item, get_task

SEEDS = {"easy": 12, "medium": 10, "hard": 6}
#: Enough to list every solution of the small puzzles; a longer list means "too many to enumerate".
SOLUTION_CAP = 300


@functools.cache
def _batch(task: str, difficulty: str, overrides: tuple[tuple[str, Any], ...]) -> tuple[Item, ...]:
    spec = get_task(task)
    cfg = spec.config(difficulty, **dict(overrides))  # type: ignore[arg-type]
    return tuple(spec.generate(f"contract:{difficulty}:{seed}", cfg) for seed in range(SEEDS[difficulty]))


def items(task: str, difficulty: str, **overrides: Any) -> Iterator[Item]:
    """Items for the contract (cached: several tests read the same ones and never change them)."""
    return iter(_batch(task, difficulty, tuple(sorted(overrides.items()))))


def test_registry_has_at_least_ten_families() -> None:
    assert len(TASK_NAMES) >= 10
    for name in TASK_NAMES:
        spec = get_task(name)
        assert spec.name == name
        assert spec.answer_format and spec.description


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("task", TASK_NAMES)
def test_gold_and_alternative_answers_score_one(task: str, difficulty: str) -> None:
    spec = get_task(task)
    for item in items(task, difficulty):
        assert "<answer></answer>" in item["question"], "every question says where the answer goes"
        assert item["info"]["task"] == task
        assert spec.score(item["answer"], item) == 1.0, (item["question"], item["answer"])
        for alternative in spec.solve(item, 4):
            assert spec.score(alternative, item) == 1.0, (item["question"], alternative)


@pytest.mark.parametrize("task", [t for t in TASK_NAMES if get_task(t).multi_solution])
def test_families_with_several_solutions_accept_answers_other_than_the_stored_one(task: str) -> None:
    """The verifier checks constraints: on some items a solution differing from the stored answer
    exists, and it scores 1. Uniqueness-seeking generators are switched off where they have a knob."""
    spec = get_task(task)
    knobs = {f for f in spec.config_cls.__dataclass_fields__}
    overrides: dict[str, Any] = {"unique": False} if "unique" in knobs else {}
    if task == "sudoku":
        overrides["blank_fraction"] = 0.7
    different = 0
    for difficulty in DIFFICULTIES:
        for item in items(task, difficulty, **overrides):
            for alternative in spec.solve(item, 4):
                if alternative != item["answer"]:
                    assert spec.score(alternative, item) == 1.0, (item["question"], alternative)
                    different += 1
    assert different > 0, f"{task}: no item with a second solution; the test proves nothing"


@pytest.mark.parametrize("task", TASK_NAMES)
def test_another_items_answer_scores_zero(task: str) -> None:
    spec = get_task(task)
    checked = 0
    for difficulty in DIFFICULTIES:
        batch = list(items(task, difficulty))
        for i, item in enumerate(batch):
            valid = spec.solve(item, SOLUTION_CAP) if spec.multi_solution else [item["answer"]]
            if len(valid) >= SOLUTION_CAP:
                continue  # too many solutions to know whether a foreign answer is one of them
            for other in batch[i + 1 :] + batch[:i]:
                expected = 1.0 if other["answer"] in valid or same_puzzle(item, other) else 0.0
                assert spec.score(other["answer"], item) == expected, (item["question"], other["answer"])
                checked += 1
    assert checked >= 2 * SEEDS["easy"], f"{task}: the cross-item check barely ran ({checked})"


def _swap_cells(
    grid_text: str, line: int, given: set[tuple[int, int]], *, column: bool = False
) -> str | None:
    """The grid with two different cells of row ``line`` (or column, with ``column=True``) swapped,
    avoiding given cells: that row/column stays a permutation while two crossing lines break.
    ``None`` if there is no such pair."""
    grid = [row.split() for row in grid_text.splitlines()]
    cells = [(c, line) if column else (line, c) for c in range(len(grid))]
    free = [cell for cell in cells if cell not in given]
    for i, (r1, c1) in enumerate(free):
        for r2, c2 in free[i + 1 :]:
            if grid[r1][c1] != grid[r2][c2]:
                grid[r1][c1], grid[r2][c2] = grid[r2][c2], grid[r1][c1]
                return "\n".join(" ".join(row) for row in grid)
    return None


def near_misses(task: str, item: Item) -> list[tuple[str, float]]:
    """Answers one small step away from the stored one, with the score each must get (worked out
    here independently of the verifier)."""
    gold, info = item["answer"], item["info"]
    out: list[tuple[str, float]] = []
    if task == "game_of_24":
        nums, target = info["numbers"], info["target"]
        out.append((" + ".join(map(str, nums)), 1.0 if sum(nums) == target else 0.0))
        out.append((" * ".join(map(str, nums)), 1.0 if math.prod(nums) == target else 0.0))
        out.append((" + ".join(map(str, nums[:-1])), 0.0))  # a number left out
        out.append((gold + " + 0", 0.0))  # a number that is not given
        out.append((gold + " = " + str(target + 1), 0.0))
        out.append((f"({gold}) ** 1", 0.0))
    elif task in ("sudoku", "futoshiki"):
        if task == "sudoku":
            given = {(r, c) for r, line in enumerate(info["puzzle"]) for c, v in enumerate(line) if v}
        else:
            given = {(r, c) for r, c, _ in info["givens"]}
        for column in (False, True):  # breaks columns (or rows) while keeping the other intact
            for line in range(len(gold.splitlines())):
                swapped = _swap_cells(gold, line, given, column=column)
                if swapped is not None:
                    out.append((swapped, 0.0))
                    break
        out.append(("\n".join(gold.splitlines()[:-1]), 0.0))
        lines = gold.splitlines()
        out.append(("\n".join(lines[1:] + lines[:1]), 0.0))  # rows rotated: givens move
    elif task == "n_queens":
        lines = gold.splitlines()
        out.append(("\n".join(lines[1:] + lines[:1]), 0.0 if info["given"] else -1.0))
        first = lines[0].split()
        out.append(("\n".join([" ".join(first[1:] + first[:1]), *lines[1:]]), 0.0))
        fixed = {r for r, _ in info["given"]}
        free = [r for r in range(len(lines)) if r not in fixed]
        rows = list(lines)
        rows[free[0]], rows[free[1]] = rows[free[1]], rows[free[0]]
        out.append(("\n".join(rows), -1.0))  # still one queen per row and column; diagonals decide
    elif task == "maze":
        moves = gold.split()
        out.append((" ".join(moves[:-1]), 0.0))
        back = {"U": "D", "D": "U", "L": "R", "R": "L"}
        out.append((" ".join([*moves, back[moves[-1]], moves[-1]]), 0.0))  # longer than shortest
        out.append((" ".join([moves[0], back[moves[0]], *moves]), 0.0))
    elif task == "graph_coloring":
        if info["edges"]:
            u, v = info["edges"][0]
            colors = dict(pair.split(": ") for pair in gold.split(", "))
            colors[str(u)] = colors[str(v)]
            out.append((", ".join(f"{k}: {c}" for k, c in colors.items()), 0.0))
        out.append((gold.rsplit(", ", 1)[0], 0.0))  # a vertex left uncoloured
    elif task == "knights_knaves":
        head = gold.split(", ")[0]
        flipped = head.replace("knight", "knave") if "knight" in head else head.replace("knave", "knight")
        out.append((gold.replace(head, flipped, 1), 0.0))
        out.append((gold.rsplit(", ", 1)[0], 0.0))
    elif task == "dyck_language":
        out.append((gold.rsplit(" ", 1)[0] if " " in gold else "", 0.0))
        out.append((gold + " " + gold.split()[-1], 0.0))
        tokens = gold.split()
        if len(set(tokens)) > 1:
            i = next(k for k in range(len(tokens) - 1) if tokens[k] != tokens[k + 1])
            tokens[i], tokens[i + 1] = tokens[i + 1], tokens[i]
            out.append((" ".join(tokens), 0.0))
    elif task == "cryptarithm":
        pairs = gold.split(", ")
        a, b = pairs[0].split("="), pairs[1].split("=")
        traded = [f"{a[0]}={b[1]}", f"{b[0]}={a[1]}", *pairs[2:]]
        out.append((", ".join(sorted(traded)), -1.0))  # valid only if the solver lists it
        out.append((", ".join(pairs[1:]), 0.0))
    elif task == "word_sorting":
        words = gold.split(", ")
        out.append((", ".join([words[1], words[0], *words[2:]]), 0.0))
        out.append((", ".join(reversed(words)), 0.0))
        out.append((", ".join(words[:-1]), 0.0))
    elif task == "boolean_expressions":
        out.append(("False" if gold == "True" else "True", 0.0))
        out.append((f"{gold} and {gold}", 0.0))
    elif task == "zebra_puzzle":
        lines = gold.splitlines()
        a, b = lines[0].split(": ")[1].split(", "), lines[1].split(": ")[1].split(", ")
        a[-1], b[-1] = b[-1], a[-1]  # two houses trade their last attribute
        out.append(("\n".join([f"House 1: {', '.join(a)}", f"House 2: {', '.join(b)}", *lines[2:]]), 0.0))
        out.append(("\n".join(lines[:-1]), 0.0))
    else:  # pragma: no cover - a new family must add its near misses here
        raise AssertionError(f"no near misses for {task}")
    return out


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
@pytest.mark.parametrize("task", TASK_NAMES)
def test_near_miss_answers_score_as_expected(task: str, difficulty: str) -> None:
    spec = get_task(task)
    n = 0
    for item in items(task, difficulty):
        valid = spec.solve(item, SOLUTION_CAP)
        for answer, expected in near_misses(task, item):
            if expected < 0:  # only the solver knows: decide by exhaustive listing
                if len(valid) >= SOLUTION_CAP:
                    continue
                expected = 1.0 if answer in valid else 0.0
            assert spec.score(answer, item) == expected, (item["question"], answer)
            n += 1
    assert n >= SEEDS[difficulty]


def same_puzzle(a: Item, b: Item) -> bool:
    """Two items that pose the same puzzle (game of 24 lists its numbers in a shuffled order, and a
    solver's expressions follow that order, so textual membership is not enough there)."""
    ia, ib = dict(a["info"]), dict(b["info"])
    if "numbers" in ia and "numbers" in ib:
        ia["numbers"], ib["numbers"] = sorted(ia["numbers"]), sorted(ib["numbers"])
    return ia == ib


def hostile_answers(marker: Path) -> list[str]:
    payload = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    return [
        "",
        "   \n\t ",
        "x" * 100_000,
        "1 2 3 4\n" * 12_500,  # 100 kB of grid-looking garbage
        payload,
        f"exec({payload!r})",
        "__import__('os').system('true')",
        "9**9**9**9",
        "9" * 5000 + " + 1",
        "(" * 50_000 + "1" + ")" * 50_000,
        "[" * 20_000 + "]" * 20_000,
        "((" * 100 + "24" + "))" * 100,
        "<answer>" * 1000,
        "True and False or " * 5000,
        "A=1, " * 20_000,
        "\x00\x01\x02" * 1000,
        "R " * 40_000,
        # short enough to pass every length bound, so the parsers themselves see them
        "(" * 90 + "1" + ")" * 90,
        "1 / (1 - 1)",
        "1" * 150,
        "2 * " * 45 + "2",
        "[[" * 60 + "]]" * 60,
        "House 1: " * 30,
    ]


@pytest.mark.parametrize("task", TASK_NAMES)
def test_hostile_answers_score_zero_quickly_and_run_nothing(
    task: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = tmp_path / "pwned"
    ran: list[str] = []

    def tripwire(*args: Any, **kwargs: Any) -> Any:
        ran.append(repr(args)[:80])
        raise AssertionError("model text was executed")

    # Anything reaching eval/exec/os.system would trip these, on top of the marker-file check.
    monkeypatch.setattr(builtins, "eval", tripwire)
    monkeypatch.setattr(builtins, "exec", tripwire)
    monkeypatch.setattr(os, "system", tripwire)
    spec = get_task(task)
    for difficulty in DIFFICULTIES:
        item = next(items(task, difficulty))
        for answer in hostile_answers(marker):
            # CPU time of this process: the work scoring did, which other processes' load does not inflate.
            start = time.process_time()
            value = spec.score(answer, item)
            elapsed = time.process_time() - start
            assert value == 0.0, (task, answer[:60])
            assert elapsed < 0.5, f"{task}: {elapsed:.2f} s of CPU on {answer[:40]!r}"
    assert not marker.exists() and not ran


def test_none_answer_scores_zero() -> None:
    for task in TASK_NAMES:
        spec = get_task(task)
        assert spec.score(None, next(items(task, "easy"))) == 0.0


@pytest.mark.parametrize("task", TASK_NAMES)
def test_config_presets_validate_and_unknown_knobs_are_rejected(task: str) -> None:
    spec = get_task(task)
    for difficulty in DIFFICULTIES:
        spec.config(difficulty)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="no config field"):
        spec.config("easy", no_such_knob=1)


@pytest.mark.parametrize("size", [4, 6, 9])
def test_sudoku_rejects_latin_squares_that_break_boxes(size: int) -> None:
    """Rows and columns alone are not enough: a cyclic Latin square fails the boxes."""
    spec = get_task("sudoku")
    item = spec.generate(0, spec.config("easy", size=size))
    empty = {**item, "info": {**item["info"], "puzzle": [[0] * size for _ in range(size)]}}
    latin = "\n".join(" ".join(str((r + c) % size + 1) for c in range(size)) for r in range(size))
    assert spec.score(latin, empty) == 0.0
    assert spec.score(item["answer"], empty) == 1.0
