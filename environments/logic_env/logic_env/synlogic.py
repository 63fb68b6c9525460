"""SynLogic-format data (the ``logic`` subset of ``PrimeIntellect/INTELLECT-3-RL``).

A row has ``question``, ``answer`` and ``info`` (a JSON string, or a dict) holding ``task`` and
``game_data`` (the SynLogic generator's record: its ``metadata`` carries the puzzle). Tasks with a
verifier here are adapted to that family's item format and scored by it; questions are kept as written
(they carry SynLogic's own answer-format instructions, so extraction follows those formats, after trying
an ``<answer>`` tag). Rows of unknown tasks are skipped and counted, never scored 0; rows of a known task
whose ``game_data`` cannot be read are skipped and counted separately.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import verifiers as vf
from logic_env.parsing import last_code_block, last_nested_brackets
from logic_env.tasks import get_task
from logic_env.tasks.sudoku import BOXES
from verifiers import extract_boxed_answer

log = logging.getLogger(__name__)

HUB_SUBSET = "logic"  # of vf.data.INTELLECT3_DATASET
INSTALL_HINT = "pip install 'logic-env[synlogic]'"

_LETTER_EQUATION = re.compile(r"\b([A-Z]+(?:\s*[+\-*]\s*[A-Z]+)+)\s*=\s*([A-Z]+)\b")
#: An equation's left side (``12 + 3 * 4``) and its result (``= 24``), matched in two steps so the scan is
#: linear: one pattern for the whole would re-scan a long chain with no ``=`` from each of its numbers.
#: Possessive quantifiers and the look-behind keep each chain to one pass from its first digit.
_NUMERIC_CHAIN = re.compile(r"(?<!\d)\d++(?:\s*+[+\-*]\s*+\d++)++")
_NUMERIC_RESULT = re.compile(r"\s*+=\s*+-?\d++")
_PUZZLE_TOKEN = re.compile(r"^(?:\d+|[Xx_])$")
_ANSWER_TAG = vf.XMLParser(["answer"])


@dataclass
class LoadReport:
    """What a SynLogic load kept and skipped (filled in when the dataset is built)."""

    kept: Counter[str] = field(default_factory=Counter)
    #: Rows of tasks with no verifier here, by SynLogic task name.
    skipped_tasks: Counter[str] = field(default_factory=Counter)
    #: Rows of supported tasks whose ``game_data`` could not be read, by task name.
    unreadable: Counter[str] = field(default_factory=Counter)


# --- answer extraction (SynLogic questions ask for their own formats) ------------------------------


#: Regex-based extraction only looks at the end of the message, where the answer is: it keeps
#: hostile inputs (long operator chains, unclosed fences) from costing more than a bounded scan.
TAIL_CHARS = 8000


def last_numeric_equation(text: str) -> str | None:
    """The last ``a + b * c = d`` in ``text`` (non-overlapping, left to right), as written."""
    found, pos = None, 0
    while (chain := _NUMERIC_CHAIN.search(text, pos)) is not None:
        result = _NUMERIC_RESULT.match(text, chain.end())
        if result is None:
            pos = chain.end()
            continue
        found, pos = text[chain.start() : result.end()], result.end()
    return found


def extract(style: str, text: str | None) -> str | None:
    """The answer part of the final message for a SynLogic task, after trying an ``<answer>`` tag."""
    if text is None or len(text) > 100_000:
        return None
    tagged = _ANSWER_TAG.parse(text).answer  # a linear scan
    if tagged is not None:
        return str(tagged)
    tail = text[-TAIL_CHARS:]
    if style == "code_block":
        return last_code_block(tail)
    if style == "grid":
        return last_code_block(tail) or last_nested_brackets(tail)
    if style == "boxed":
        return extract_boxed_answer(tail)
    if style == "equation":
        return last_numeric_equation(tail[-2000:])
    if style == "last_line":
        block = last_code_block(tail)
        if block is not None:
            return block
        lines = [ln for ln in tail.splitlines() if ln.strip()]
        return lines[-1] if lines else None
    raise ValueError(f"unknown extraction style {style!r}")


# --- adapters: SynLogic metadata -> this package's item info ----------------------------------------

Adapted = tuple[dict[str, Any], str | None]  # (item info, gold answer to self-check or None)
Adapter = Callable[[str, str, Mapping[str, Any]], Adapted | None]


def _game_of_24(question: str, answer: str, meta: Mapping[str, Any]) -> Adapted | None:
    numbers = [int(n) for n in meta["numbers"]]
    target = float(meta.get("result", 24))
    if not target.is_integer():
        return None
    ops = [o for o in "+-*/" if o in "".join(map(str, meta.get("operators", "+-*/")))]
    return {"numbers": numbers, "target": int(target), "ops": ops}, None


def _sudoku(question: str, answer: str, meta: Mapping[str, Any]) -> Adapted | None:
    puzzle = [
        [0 if str(v).upper() in ("0", "X", "_", "") else int(v) for v in row]
        for row in meta["original_sudoku"]
    ]
    size = len(puzzle)
    if size not in BOXES or any(len(r) != size for r in puzzle):
        return None
    return {"puzzle": puzzle, "size": size, "box": list(BOXES[size])}, answer or None


def _futoshiki(question: str, answer: str, meta: Mapping[str, Any]) -> Adapted | None:
    n = int(meta["grid_size"])
    coords = [(int(r), int(c)) for r, c in meta.get("prefilled_coords", [])]
    givens: list[list[int]] = []
    if coords:
        # The given numbers are only in the question's grid: rows of n cells, digits or X.
        lines = question.split("Current puzzle:", 1)[-1].splitlines()
        grid = [
            ln.split()
            for ln in lines
            if len(ln.split()) == n and all(_PUZZLE_TOKEN.match(t) for t in ln.split())
        ]
        if len(grid) < n:
            return None
        grid = grid[:n]
        for r, c in coords:
            if not grid[r][c].isdigit():
                return None
            givens.append([r, c, int(grid[r][c])])
    constraints = [
        [[int(a[0]), int(a[1])], [int(b[0]), int(b[1])], str(s)] for a, b, s in meta.get("constraints", [])
    ]
    if any(s not in ("<", ">") for _, _, s in constraints):
        return None
    return {"size": n, "givens": givens, "constraints": constraints}, answer or None


def _dyck(question: str, answer: str, meta: Mapping[str, Any]) -> Adapted | None:
    prefix = "".join(str(meta["question_sequence"]).split())
    full = "".join(str(meta["full_sequence"]).split())
    return {"prefix": prefix}, full


def _word_sorting(question: str, answer: str, meta: Mapping[str, Any]) -> Adapted | None:
    expected = [w.strip() for w in answer.replace("，", ",").split(",") if w.strip()]
    if not expected:
        return None
    return {"words": expected, "expected": expected, "order": "ascending"}, answer


def _cryptarithm(question: str, answer: str, meta: Mapping[str, Any]) -> Adapted | None:
    found = _LETTER_EQUATION.findall(question)
    if not found:
        return None
    left, result = found[-1]
    terms = re.findall(r"[A-Z]+|[+\-*]", left)
    words, ops = terms[0::2], terms[1::2]
    return {"words": words, "ops": ops, "result": result}, answer or None


#: SynLogic task name -> (family here, adapter, extraction style).
ADAPTERS: dict[str, tuple[str, Adapter, str]] = {
    "game_of_24": ("game_of_24", _game_of_24, "code_block"),
    "sudoku": ("sudoku", _sudoku, "grid"),
    "futoshiki": ("futoshiki", _futoshiki, "grid"),
    "dyck_language": ("dyck_language", _dyck, "last_line"),
    "word_sorting": ("word_sorting", _word_sorting, "boxed"),
    "cryptarithm": ("cryptarithm", _cryptarithm, "equation"),
}


def normalize_task(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.strip().lower()).strip("_")


def _as_mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        value = json.loads(value) if value.strip() else {}
    if not isinstance(value, Mapping):
        raise TypeError(f"expected a mapping, got {type(value).__name__}")
    return dict(value)


def adapt_row(raw: Mapping[str, Any]) -> tuple[str, dict[str, Any] | None]:
    """(SynLogic task name, this package's row without ``example_id``) — the row is ``None`` when the
    task is unknown or its data unreadable (``adapt_row`` itself never raises on bad rows)."""
    try:
        info = _as_mapping(raw.get("info") or {})
    except (ValueError, TypeError):
        return "unknown", None
    task = normalize_task(str(info.get("task") or raw.get("task") or "unknown"))
    entry = ADAPTERS.get(task)
    if entry is None:
        return task, None
    family, adapter, style = entry
    question, answer = str(raw.get("question") or ""), str(raw.get("answer") or "")
    try:
        game_data = _as_mapping(info.get("game_data") or {})
        meta = _as_mapping(game_data.get("metadata", game_data))
        adapted = adapter(question, answer, meta)
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        log.debug("unreadable %s row: %s", task, exc)
        adapted = None
    if adapted is None or not question:
        return task, {}
    item_info, gold = adapted
    spec = get_task(family)
    # A row whose own reference answer fails our verifier means we read it wrongly: skip, never misscore.
    if gold is not None and spec.score(gold, {"answer": gold, "info": item_info}) != 1.0:
        return task, {}
    row_info = {
        **item_info,
        "verifier": family,
        "source": "synlogic",
        "synlogic_task": task,
        "extract": style,
    }
    return task, {"question": question, "answer": answer, "task": task, "info": row_info}


def read_source(source: str, split: str) -> Iterable[Mapping[str, Any]]:
    """Rows from the hub (``source="synlogic"``, needs ``datasets``) or a local ``.jsonl`` / ``.json``
    (a list) / ``.parquet`` file (the standard library / pyarrow: no ``datasets`` needed)."""
    if source == "synlogic":
        return vf.data.hf_records(  # type: ignore[no-any-return]
            vf.data.INTELLECT3_DATASET, HUB_SUBSET, split=split, install_hint=INSTALL_HINT
        )
    return vf.data.read_records(source)  # type: ignore[no-any-return]


def build_rows(
    source: str, split: str, num_examples: int, tasks: set[str] | None, report: LoadReport
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for raw in read_source(source, split):
        if 0 <= num_examples <= len(rows):
            break
        task, row = adapt_row(raw)
        if row is None:
            report.skipped_tasks[task] += 1
            continue
        if not row:
            report.unreadable[task] += 1
            continue
        if tasks is not None and task not in tasks and row["info"]["verifier"] not in tasks:
            continue
        row["example_id"] = len(rows)
        rows.append(row)
        report.kept[task] += 1
    if report.skipped_tasks:
        log.warning(
            "logic-env: skipped %d SynLogic rows of tasks without a verifier here: %s",
            sum(report.skipped_tasks.values()),
            dict(report.skipped_tasks),
        )
    if report.unreadable:
        log.warning(
            "logic-env: skipped %d SynLogic rows with unreadable game_data: %s",
            sum(report.unreadable.values()),
            dict(report.unreadable),
        )
    return rows
