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

.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy verifiers hub_server
set +e
.venv/bin/python -m pytest -q -ra --durations=15 "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: that is a failure here" >&2
  exit 1
fi
exit "$status"
