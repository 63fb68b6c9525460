#!/usr/bin/env bash
# The whole test suite, as CI runs it: installs what it needs, starts nothing by hand (tests start their
# own servers: scripted model server, SmolLM2, hub, PostgreSQL, sandboxes), lints, then runs pytest.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh

# Tiers that need a real component must fail, not skip, when it is missing.
export VF_REQUIRE_SANDBOX=1 VF_REQUIRE_POSTGRES=1 VF_REQUIRE_SMOLLM=1 VF_REQUIRE_WHEELHOUSE=1 VF_REQUIRE_TORCH=1 VF_REQUIRE_RAY=1
# tests/serve drive vf-serve with the reference SDK's own client from .venv-ref (scripts/setup.sh).
export VF_REQUIRE_REFERENCE_SDK=1
export VF_REQUIRE_BROWSER=1
# tests/training/test_prime_rl_orchestrator.py runs prime-rl v0.5.0's real orchestrator from .venv-prime-rl.
export VF_REQUIRE_PRIME_RL=1

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy verifiers hub_server
set +e
# Most tests wait on subprocesses and servers, not the CPU: a few workers at once, each module one unit,
# the longest units first (tests/scheduling.py). VF_TEST_WORKERS=0 runs everything in this process.
.venv/bin/python -m pytest -q -ra --durations=25 -n "${VF_TEST_WORKERS:-4}" --dist loadscope "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$status"
