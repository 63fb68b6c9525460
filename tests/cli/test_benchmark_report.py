"""A model card's table from a suite (issue 31): ``benchmark``, ``reference`` and ``sources`` per ``[[eval]]``,
the closing benchmark table (avg@k with its 95% interval, pass@k, n, the card's value, tokens), the same table
from saved runs with ``vf-eval report``, the protocol with each value's source under ``--dry-run``; and
``suites/intellect3.toml`` itself. Real console scripts against the scripted model server."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from tests.cli._helpers import ROOT, RULES, assert_one_line_error, clean_env, run_cli, run_dirs
from verifiers.eval.config import ConfigError, load_suite
from verifiers.eval.report import ReportRow, describe_data, package_drift, report_row, to_markdown
from verifiers.hub.packaging import module_name
from verifiers.hub.wire import wilson_interval
from verifiers.types import DatasetRecord, RunCounts, RunMetadata

INTELLECT3 = ROOT / "suites" / "intellect3.toml"
#: INTELLECT-3's evaluation table (model card / technical report): environment id -> value in percent.
CARD = {
    "aime2024": 90.8,
    "aime2025": 88.0,
    "livecodebench": 69.3,
    "gpqa": 74.4,
    "hle": 14.6,
    "mmlu-pro": 81.9,
}
#: The values that decide a benchmark's number: each needs a written source.
PROTOCOL = (
    "reference",
    "num_examples",
    "rollouts_per_example",
    "sampling_args.temperature",
    "sampling_args.top_p",
    "sampling_args.max_tokens",
)


# --- suites/intellect3.toml ----------------------------------------------------------------------
def test_the_intellect3_suite_covers_the_card_with_a_sourced_protocol() -> None:
    entries = load_suite(INTELLECT3)
    assert {e.env_id: e.reference for e in entries} == CARD
    assert len({e.name for e in entries}) == 6 and all(e.benchmark for e in entries)
    for e in entries:
        sampling = e.settings["sampling_args"]
        assert {"temperature", "top_p", "max_tokens"} <= set(sampling), e.origin
        assert e.settings["num_examples"] == -1, e.origin  # every problem: a card's number is over all
        missing = [name for name in PROTOCOL if len(e.sources.get(name, "")) < 20]
        assert not missing, f"{e.origin}: no source for {missing}"
    by_env = {e.env_id: e for e in entries}
    for aime in ("aime2024", "aime2025"):  # 30 problems are noisy: many samples each
        assert by_env[aime].settings["rollouts_per_example"] >= 16
    assert "diamond" in by_env["gpqa"].name.lower()


def test_each_benchmark_package_carries_the_suites_protocol() -> None:
    """``vf-eval aime2025`` alone follows the suite: each benchmark package in this checkout has the suite
    entry's values as its ``[tool.verifiers.eval]`` defaults (issue 31). Read from the pyproject files, so
    nothing needs installing; a benchmark whose package is not in the checkout is not checked."""
    checked = []
    for entry in load_suite(INTELLECT3):
        pyproject = ROOT / "environments" / module_name(entry.env_id) / "pyproject.toml"
        if not pyproject.is_file():
            continue
        table = tomllib.loads(pyproject.read_text()).get("tool", {}).get("verifiers", {}).get("eval", {})
        assert package_drift(entry, table) == [], pyproject
        checked.append(entry.env_id)
    if not checked:
        pytest.skip("none of the six benchmark packages is in this checkout")


# --- the suite file's new keys ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        ("reference = 140.0\n", "reference must be the model card's value in percent"),
        ('reference = "90.8"\n', "reference must be the model card's value in percent"),
        ('benchmark = ""\n', "benchmark must be a name"),
        (
            '[eval.sources]\ntemperature = "nowhere"\n',
            "sources names temperature, which this entry does not set",
        ),
        ("[eval.sources]\nnum_examples = 3\n", 'sources must be a table of setting = "where'),
    ],
)
def test_bad_entry_fields_are_refused_with_what_to_fix(tmp_path: Path, extra: str, needle: str) -> None:
    suite = tmp_path / "suite.toml"
    suite.write_text('[[eval]]\nenv_id = "cli-env"\nnum_examples = 2\n' + extra)
    with pytest.raises(ConfigError, match=re.escape(needle)):
        load_suite(suite)


# --- a suite run, its table, and the same table from the saved runs ---------------------------------
SUITE = """\
[[eval]]
env_id = "cli-env"
benchmark = "Bench A"
reference = 40.0
model = "m"
base_url = "{url}"
num_examples = 2
rollouts_per_example = 3
sampling_args = {{ temperature = 0.5 }}
[eval.sources]
reference = "the card of model m, table 1"
rollouts_per_example = "three samples per problem: the protocol of bench A"
"sampling_args.temperature" = "the card's appendix B"

[[eval]]
env_id = "cli-env"
benchmark = "Bench B"
reference = 90.0
model = "m"
base_url = "{url}"
num_examples = 6
rollouts_per_example = 1
[eval.env_args]
size = 6
"""


def _suite(workdir: Path, url: str) -> Path:
    path = workdir / "suite.toml"
    path.write_text(SUITE.format(url=url))
    return path


def _cells(meta: dict, benchmark: str, reference: float) -> list[str]:
    """The row the report must show for a run, computed here from its metadata.json alone."""
    k, n, mean = meta["rollouts_per_example"], meta["counts"]["scored"], meta["avg_reward"]
    low, high = wilson_interval(mean, n)
    return [
        benchmark,
        f"avg@{k} {100 * mean:.1f}",
        f"[{100 * low:.1f}, {100 * high:.1f}]",
        f"pass@{k} {100 * meta['pass_at_k'][str(k)]:.1f}",
        f"{meta['num_examples']} × {k} ({n} scored)",
        f"{reference:.1f} ({100 * mean - reference:+.1f})",
    ]


def test_a_suite_ends_with_the_benchmark_table_and_report_prints_it_again(
    workdir: Path, start_server
) -> None:
    srv = start_server(RULES)
    suite = _suite(workdir, srv.url)
    res = run_cli("vf-eval", "@", str(suite), cwd=workdir)
    assert res.code == 0, res.stdout[-3000:] + res.stderr
    table = res.stdout[res.stdout.index("Suite: 2 evaluations") :]
    header = next(line for line in table.splitlines() if "benchmark" in line)
    for column in ("avg@k", "95% CI", "pass@k", "n", "reference", "tokens"):
        assert column in header, header
    a, b = sorted(
        run_dirs(workdir), key=lambda p: json.loads((p / "metadata.json").read_text())["num_examples"]
    )
    meta_a, meta_b = (json.loads((d / "metadata.json").read_text()) for d in (a, b))
    assert meta_a["avg_reward"] == pytest.approx(1.0) and meta_b["avg_reward"] == pytest.approx(2 / 6)
    rows = {line.split("│")[2].strip(): line for line in table.splitlines() if "Bench " in line}
    for cell in _cells(meta_a, "Bench A", 40.0):
        assert cell in rows["Bench A"], (cell, rows["Bench A"])
    for cell in _cells(meta_b, "Bench B", 90.0):
        assert cell in rows["Bench B"], (cell, rows["Bench B"])
    # 6/6 rollouts at 1.0: an interval, not "100.0 ± 0.0" (issue 32, item 3)
    assert "[61.0, 100.0]" in rows["Bench A"]

    md = run_cli("vf-eval", "report", str(a), str(b), "--suite", str(suite), "--format", "md", cwd=workdir)
    assert md.code == 0, md.stderr
    lines = [line for line in md.stdout.splitlines() if line.startswith("|")]
    assert lines[0] == "| benchmark | avg@k | 95% CI | pass@k | n | reference | tokens |"
    assert re.fullmatch(r"\|( -+ \|)( -+: \|){6}", lines[1])
    assert lines[2].startswith("| Bench A | ") and lines[3].startswith("| Bench B | ")
    expected = [(meta_a, "Bench A", 40.0), (meta_b, "Bench B", 90.0)]
    for line, (meta, name, ref) in zip(lines[2:], expected, strict=True):
        assert [c.strip() for c in line.strip("|").split("|")][:6] == _cells(meta, name, ref)
    assert "Model: m" in md.stdout

    shown = run_cli("vf-eval", "report", str(a), "--suite", str(suite), "--format", "table", cwd=workdir)
    assert shown.code == 0, shown.stderr
    (line,) = [ln for ln in shown.stdout.splitlines() if "Bench A" in ln]
    assert all(cell in line for cell in _cells(meta_a, "Bench A", 40.0)), line

    js = run_cli("vf-eval", "report", str(b), "--format", "json", cwd=workdir)  # no suite: no names
    assert js.code == 0, js.stderr
    (row,) = json.loads(js.stdout)["rows"]
    low, high = wilson_interval(2 / 6, 6)
    assert row["benchmark"] == "cli-env" and row["reference"] is None and row["k"] == 1
    assert row["avg_at_k"] == pytest.approx(100 * 2 / 6)
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(100 * low), pytest.approx(100 * high))
    usage = meta_b["usage"]
    assert (row["prompt_tokens"], row["completion_tokens"]) == (
        usage["prompt_tokens"],
        usage["completion_tokens"],
    )


def test_dry_run_prints_the_protocol_with_each_values_source(workdir: Path, start_server) -> None:
    srv = start_server(RULES)
    suite = _suite(workdir, srv.url)
    res = run_cli("vf-eval", "@", str(suite), "--dry-run", cwd=workdir)
    assert res.code == 0, res.stderr
    protocol = res.stdout[res.stdout.index("Protocol") :]
    rows = [" ".join(line.replace("│", " ").split()) for line in protocol.splitlines()]
    assert any("Bench A rollouts_per_example 3 three samples per problem" in r for r in rows), protocol
    assert any("Bench A sampling_args.temperature 0.5 the card's appendix B" in r for r in rows)
    assert any("Bench A reference 40.0 the card of model m, table 1" in r for r in rows)
    # a value the file leaves to the package default says so
    assert any(
        "Bench B sampling_args.max_tokens 7 package default ([tool.verifiers.eval] of cli-env)" in r
        for r in rows
    ), protocol
    assert any("Bench B env_args.size 6 the suite file (no source given)" in r for r in rows), protocol
    assert run_dirs(workdir) == []  # nothing ran
    # where the suite's protocol is not the package's own defaults, `vf-eval cli-env` alone differs: said
    assert (
        "note: Bench A: the suite sets rollouts_per_example = 3, cli-env's [tool.verifiers.eval] 2 "
        "(vf-eval cli-env alone differs)" in res.stdout
    )
    assert (
        "Bench A: the suite sets sampling_args.temperature = 0.5, cli-env's [tool.verifiers.eval] 0.25"
        in res.stdout
    )
    assert (
        "Bench B: the suite sets num_examples = 6" in res.stdout
        and "Bench B: the suite sets rollouts" in res.stdout
    )
    # a flag overrides the file, and the protocol names the flag as the source
    res = run_cli("vf-eval", "@", str(suite), "--dry-run", "-r", "5", "--json", cwd=workdir)
    assert res.code == 0, res.stderr
    docs = [json.loads(chunk) for chunk in re.split(r"(?m)^(?=\{)", res.stdout) if chunk.strip()]
    protocol_rows = next(d["protocol"] for d in docs if "protocol" in d)
    rollouts = [r for r in protocol_rows if r["setting"] == "rollouts_per_example"]
    assert [(r["benchmark"], r["value"], r["source"]) for r in rollouts] == [
        ("Bench A", 5, "flag"),
        ("Bench B", 5, "flag"),
    ]


def test_report_refuses_what_is_not_a_run(workdir: Path) -> None:
    res = run_cli("vf-eval", "report", str(workdir), cwd=workdir, env=clean_env())
    assert_one_line_error(res, 2, "is not a run directory (no metadata.json)")


# --- issue 32, item 3: one interval, labelled -------------------------------------------------------
def _meta(avg: float, sd: float, scored: int) -> RunMetadata:
    return RunMetadata(
        env_id="e",
        env_version="0.1.0",
        env_content_hash="h",
        sdk_version="0",
        model="m",
        base_url="http://x/v1",
        num_examples=scored,
        rollouts_per_example=1,
        started_at="2026-01-01T00:00:00Z",
        status="completed",
        counts=RunCounts(planned=scored, completed=scored, scored=scored),
        avg_reward=avg,
        std_reward=sd,
        pass_at_k={"1": avg},
    )


def test_five_perfect_rollouts_get_an_interval_not_plus_minus_zero() -> None:
    from rich.console import Console

    from verifiers.cli._display import summary_table

    console = Console(width=200, record=True, color_system=None)
    console.print(summary_table(_meta(1.0, 0.0, 5), [], None))
    text = console.export_text()
    assert "mean 1.000, 95% CI [0.566, 1.000], sd 0.000" in text, text
    assert "±" not in text
    md = to_markdown([report_row(_meta(1.0, 0.0, 5), reference=90.0)])
    assert "| avg@1 100.0 | [56.6, 100.0] |" in md and "±" not in md


def test_every_row_says_which_data_it_was_measured_on() -> None:
    """A LiveCodeBench number means nothing without its window: the report names each run's data."""
    lcb = DatasetRecord(
        dataset="livecodebench/code_generation_lite",
        revision="0fe84c3912ea0c4d4a78037083943e8f0c4dd505",
        configs=["release_v6"],
        split="test",
        rows=454,
        sha256="0" * 64,
        selection={"start_date": "2024-08-01", "end_date": "2025-05-01", "source_rows": 1055},
    )
    text = describe_data(lcb)
    assert text == (
        "livecodebench/code_generation_lite@0fe84c3 release_v6, start_date 2024-08-01, end_date 2025-05-01: "
        "454 rows"
    )
    assert describe_data(None) is None
    md = to_markdown([ReportRow(benchmark="LiveCodeBench v6", env_id="livecodebench", data=text)])
    assert f"- LiveCodeBench v6: {text}" in md.splitlines()
