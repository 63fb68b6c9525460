"""Reading pytest's ``-rA`` short test summary into test id -> status.

The two upstream conventions for a test id:

- **nodeid** (SWE-bench's ``FAIL_TO_PASS``/``PASS_TO_PASS``): the pytest node id as printed,
  ``tests/test_x.py::TestA::test_b[1-2]``;
- **r2e** (R2E-Gym's ``expected_output_json``): the node id without its file, parts joined by ``.``,
  ``TestA.test_b[1-2]``.

Only the section after the ``short test summary info`` banner is read (R2E-Gym's rule; SWE-bench reads
every line that starts with a status word, which lets a test's own output spoof results). ANSI colour
codes are stripped first. A ``FAILED``/``ERROR`` line's `` - message`` suffix is dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

IdStyle = Literal["nodeid", "r2e"]
#: pytest's outcome words in the short summary
SUMMARY_STATUSES = ("PASSED", "FAILED", "ERROR", "SKIPPED", "XFAIL", "XPASS")
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_BANNER = re.compile(r"^=+ short test summary info =+\s*$", re.M)
#: the closing ``==== 3 passed, 1 failed in 0.12s ====`` line
_FINAL = re.compile(
    r"^=+ .*\b(?:passed|failed|error|errors|skipped|deselected|xfailed|xpassed|no tests ran)\b.* =+\s*$"
)
#: ``SKIPPED [2] tests/x.py:10: reason`` names a location, not a test
_SKIP_COUNT = re.compile(r"^\[\d+\]$")


def strip_ansi(text: str) -> str:
    return _ANSI.sub("", text)


@dataclass(frozen=True)
class TestLog:
    """What one pytest run reported."""

    #: node id -> pytest outcome word (PASSED, FAILED, ERROR, SKIPPED, XFAIL, XPASS)
    outcomes: dict[str, str]
    #: ``ERROR`` entries that are files or directories, not tests: collection failures
    collection_errors: tuple[str, ...]
    #: the short summary banner was present (pytest ran to its end)
    has_summary: bool
    #: node id -> the `` - message`` of its FAILED/ERROR line (assertion text), when pytest printed one
    messages: dict[str, str] = field(default_factory=dict)


def parse_pytest_summary(log: str) -> TestLog:
    """The outcomes listed in the ``-rA`` short test summary of ``log`` (last run, if several)."""
    text = strip_ansi(log).replace("\r\n", "\n")
    banners = list(_BANNER.finditer(text))
    if not banners:
        return TestLog({}, (), False, {})
    outcomes: dict[str, str] = {}
    messages: dict[str, str] = {}
    collection: list[str] = []
    for raw in text[banners[-1].end() :].split("\n"):
        line = raw.rstrip()
        if _FINAL.match(line):
            break
        word, _, rest = line.partition(" ")
        if word not in SUMMARY_STATUSES or not rest:
            continue
        message = ""
        if word in ("FAILED", "ERROR", "XFAIL", "XPASS", "SKIPPED"):
            rest, _, message = rest.partition(" - ")
        name = rest.strip()
        if word == "SKIPPED" and _SKIP_COUNT.match(name.split(" ", 1)[0]):
            continue
        if word == "ERROR" and "::" not in name:
            collection.append(name)
            continue
        outcomes[name] = word
        if message and word in ("FAILED", "ERROR"):
            messages[name] = message.strip()
    return TestLog(outcomes, tuple(collection), True, messages)


def to_r2e_id(nodeid: str) -> str:
    """R2E-Gym's id of a test: the node id without its file, joined by ``.``.

    Parametrize ids are kept whole even when they contain ``::``.
    """
    head, bracket, param = nodeid.partition("[")
    parts = head.split("::")
    name = ".".join(parts[1:]) if len(parts) > 1 else parts[0]
    return f"{name}{bracket}{param}"


def convert_ids(outcomes: dict[str, str], style: IdStyle) -> dict[str, str]:
    if style == "nodeid":
        return dict(outcomes)
    return {to_r2e_id(k): v for k, v in outcomes.items()}
