"""How scripts/test.sh spreads the suite over pytest-xdist workers (``-n N --dist loadscope``).

Most tests wait on subprocesses, servers and sandboxes rather than the CPU, so a 2-core machine runs a
few at once. Two rules keep that safe and short:

- A module is one unit of work (its module- and package-scoped fixtures — a hub, a browser, a Ray
  cluster, a PostgreSQL template — are set up once), except the modules in ``SPREAD``, whose tests share
  nothing expensive and are long enough that one worker running them all would be the whole run's tail.
  Tests that share a session-scoped component run as one unit (``SHARED``).
- The longest units start first (``LONGEST_FIRST``, from ``--durations`` of a CI run): the run ends when
  its last unit does, so a 6-minute unit must not be handed out at the end.

The units are xdist's scopes (``UnitScheduling``), computed from node ids on the controller. Marking tests
with ``xdist_group`` instead does not work with pytest 9: xdist renames ``item._nodeid``, which pytest no
longer reads, so every group is silently ignored.
"""

from __future__ import annotations

from typing import Any

import pytest

#: Modules whose tests are scheduled one by one (no module-scoped fixtures in them).
SPREAD = (
    "tests/docs/test_docs.py",
    "tests/benchmarks/test_smoke.py",
    "tests/hub/test_eval_push.py",
    "tests/hub/test_e2e.py",
    "tests/hub/test_smoke_check.py",
    "tests/hub/test_fuzz.py",
    "environments/swe_env/tests/test_validate.py",
    "environments/swe_env/tests/test_e2e.py",
)
#: Tests that share a session-scoped component run as one unit, whichever module they are in.
SHARED = ("tests/eval_ray/", "tests/hub/browser/")
#: Units by measured wall time, longest first; every other unit follows in collection order.
LONGEST_FIRST = (
    "tests/training/test_prime_rl_orchestrator.py",
    "tests/docs/test_docs.py",
    "tests/hub/browser/",
    "tests/benchmarks/test_smoke.py::test_benchmark_runs_at_smoke_size[hub_api]",
    "tests/eval_ray/",
    "tests/hub/test_smoke_report.py",
    "tests/training/test_train_cpu.py",
    "tests/hub/test_fresh_venv_install.py",
    "tests/cli/test_init_install.py",
    "environments/swe_env/tests/test_grading.py",
    "tests/hub/test_star_race.py",
    "tests/hub/test_demo.py",
    "tests/training/test_prime_rl_bridge.py",
    "tests/hub/test_eval_push.py",
    "tests/hub/test_e2e.py",
    "environments/swe_env/tests/",
)


def unit_of(nodeid: str) -> str:
    """The unit of work a test belongs to."""
    path = nodeid.split("::", 1)[0]
    for shared in SHARED:
        if path.startswith(shared):
            return shared
    if path in SPREAD:
        return nodeid
    if path == "tests/training/test_prime_rl_orchestrator.py":
        # one unit per orchestrator run: its module fixture is parametrized by the run (the test id's brackets)
        return f"{path}[{nodeid.partition('[')[2]}"
    return path


def _rank(unit: str) -> int:
    for i, prefix in enumerate(LONGEST_FIRST):
        if unit.startswith(prefix):
            return i
    return len(LONGEST_FIRST)


def schedule(items: list[pytest.Item]) -> None:
    """Put the longest units first, in place; the order within a unit is kept (pytest groups a
    parametrized module fixture's tests by parameter). xdist hands out units in this order."""
    items.sort(key=lambda item: _rank(unit_of(item.nodeid)))


def make_scheduler(config: pytest.Config, log: Any) -> Any:
    """xdist's scope scheduling with ``unit_of`` as the scope (xdist is imported only when it runs)."""
    from xdist.scheduler import LoadScopeScheduling

    class UnitScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return unit_of(nodeid)

    return UnitScheduling(config, log)
