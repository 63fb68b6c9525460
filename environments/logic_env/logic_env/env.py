"""The logic environment: rows from the generators, SynLogic data or reasoning-gym; one rubric."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, overload

import verifiers as vf
from logic_env import rg_backend, synlogic
from logic_env.parsing import LogicParser
from logic_env.tasks import DIFFICULTIES, TASK_NAMES, get_task

DifficultyArg = Literal["easy", "medium", "hard", "mixed"]


class LogicEnv(vf.SingleTurnEnv):
    """A single-turn environment over logic puzzles; knows what a SynLogic load skipped."""

    def __init__(self, *, report: synlogic.LoadReport, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._report = report

    @property
    def skipped_tasks(self) -> dict[str, int]:
        """Rows skipped because their task has no verifier here (builds the dataset if needed)."""
        len(self.rows("train"))
        return dict(self._report.skipped_tasks)

    @property
    def unreadable_rows(self) -> dict[str, int]:
        """Rows of supported tasks skipped because their data could not be read."""
        len(self.rows("train"))
        return dict(self._report.unreadable)


class GeneratedRows(Sequence[dict[str, Any]]):
    """Generated rows, built one at a time on first access (a run of 10 examples out of 200 builds 10).

    Round-robin over ``tasks``; row ``i`` depends only on (task list, seed, difficulty, i).
    """

    def __init__(
        self,
        tasks: Sequence[str],
        num_examples: int,
        seed: int,
        difficulty: DifficultyArg,
        task_config: Mapping[str, Mapping[str, Any]],
    ) -> None:
        self._specs = [get_task(t) for t in tasks]
        self._configs = {
            (s.name, d): s.config(d, **dict(task_config.get(s.name, {})))
            for s in self._specs
            for d in DIFFICULTIES
        }
        self._n, self._seed, self._difficulty = num_examples, seed, difficulty
        self._cache: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self._n))]
        if index < 0:
            index += self._n
        if not 0 <= index < self._n:
            raise IndexError(index)
        row = self._cache.get(index)
        if row is None:
            row = self._cache[index] = self._build(index)
        return row

    def _build(self, i: int) -> dict[str, Any]:
        spec = self._specs[i % len(self._specs)]
        level = self._difficulty
        if level == "mixed":
            level = DIFFICULTIES[(i // len(self._specs)) % len(DIFFICULTIES)]
        item = spec.generate(f"{self._seed}:{level}:{i}", self._configs[(spec.name, level)])
        info = {**item["info"], "verifier": spec.name, "source": "generated", "difficulty": level}
        return {
            "example_id": i,
            "question": item["question"],
            "answer": item["answer"],
            "task": spec.name,
            "info": info,
        }


def correct_answer(
    completion: vf.Messages | str, answer: str, info: dict[str, Any], parser: LogicParser
) -> float:
    """1 if the answer satisfies the puzzle (the family's verifier), else 0."""
    source = info.get("source", "generated")
    if source == "reasoning_gym":
        return rg_backend.score(parser.parse_answer(completion), info)
    spec = get_task(str(info["verifier"]))
    if source == "synlogic":
        text = synlogic.extract(str(info["extract"]), parser.final_text(completion))
    else:
        text = parser.parse_answer(completion)
    return spec.score(text, {"answer": answer, "info": info})


def answer_format(completion: vf.Messages | str, parser: LogicParser) -> float:
    """1 if the final message has exactly one <answer> block after a closed (or no) think block."""
    texts = vf.parsers.assistant_texts(completion)
    return 1.0 if texts and parser.follows_format(texts[-1]) else 0.0


def build_environment(
    *,
    tasks: Sequence[str] | None,
    num_examples: int,
    seed: int,
    difficulty: DifficultyArg,
    source: str,
    task_config: Mapping[str, Mapping[str, Any]] | None,
    rg_tasks: Sequence[str] | None,
    rg_config: Mapping[str, Mapping[str, Any]] | None,
    split: str,
    system_prompt: str | None,
) -> LogicEnv:
    if difficulty not in (*DIFFICULTIES, "mixed"):
        raise ValueError(f"difficulty must be one of {(*DIFFICULTIES, 'mixed')}, not {difficulty!r}")
    if isinstance(tasks, str):
        tasks = [tasks]
    if rg_tasks is not None and source != "reasoning_gym":
        raise ValueError("rg_tasks only applies to source='reasoning_gym'")
    if rg_config is not None and source != "reasoning_gym":
        raise ValueError("rg_config only applies to source='reasoning_gym'")
    report = synlogic.LoadReport()
    task_config = dict(task_config or {})
    builder: Callable[[], Sequence[dict[str, Any]]]

    if source == "generated":
        names = list(tasks) if tasks is not None else list(TASK_NAMES)
        if not names:
            raise ValueError("tasks must name at least one task")
        for name in names:
            get_task(name)  # unknown names raise here, with the list of known ones
        for name, overrides in task_config.items():
            if name not in names:
                raise ValueError(f"task_config names {name!r}, which is not among the tasks {names}")
            get_task(name).config("medium", **dict(overrides))  # bad fields raise now, not at first use
        if num_examples < 1:
            raise ValueError("num_examples must be >= 1 for generated data")

        def generated() -> Sequence[dict[str, Any]]:
            return GeneratedRows(names, num_examples, seed, difficulty, task_config)

        builder = generated

    elif source == "reasoning_gym":
        if tasks is not None or task_config:
            raise ValueError("with source='reasoning_gym' choose tasks with rg_tasks (and rg_config)")
        if not rg_tasks:
            raise ValueError("source='reasoning_gym' needs rg_tasks, e.g. ['mini_sudoku', 'knights_knaves']")
        if num_examples < 1:
            raise ValueError("num_examples must be >= 1 for reasoning-gym data")
        chosen = list(rg_tasks)
        rg_backend.check_tasks(chosen)
        rg_cfg = dict(rg_config or {})

        def from_reasoning_gym() -> Sequence[dict[str, Any]]:
            return rg_backend.build_rows(chosen, num_examples, seed, rg_cfg)

        builder = from_reasoning_gym

    else:
        if source != "synlogic" and vf.data.local_path(source) is None:
            raise ValueError(
                f"source must be 'generated', 'synlogic', 'reasoning_gym' or a .jsonl/.json/.parquet file; "
                f"{source!r} is none of these"
            )
        if task_config:
            raise ValueError("task_config only applies to generated data")
        wanted: set[str] | None = None
        if tasks is not None:
            allowed = set(TASK_NAMES) | set(synlogic.ADAPTERS)
            unknown = sorted(set(tasks) - allowed)
            if unknown:
                raise ValueError(f"no verifier for task(s) {unknown}; supported: {sorted(allowed)}")
            wanted = set(tasks)

        def from_synlogic() -> Sequence[dict[str, Any]]:
            return synlogic.build_rows(source, split, num_examples, wanted, report)

        builder = from_synlogic

    parser = LogicParser()
    rubric = vf.Rubric(funcs=[correct_answer], weights=[1.0], parser=parser)
    rubric.add_metric(answer_format)
    return LogicEnv(
        report=report,
        dataset=builder,
        system_prompt=system_prompt,
        parser=parser,
        rubric=rubric,
        env_id="logic-env",
    )
