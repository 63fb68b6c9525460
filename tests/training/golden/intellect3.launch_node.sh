#!/usr/bin/env bash
# Per-node launcher for the intellect3 preset (prime-rl v0.5.0). Run on every node (the Slurm batch
# file does: srun bash launch_node.sh). Roles by hostname:
#   inference nodes (44): infer-000 infer-001 infer-002 infer-003 infer-004 infer-005 infer-006 infer-007 infer-008 infer-009 infer-010 infer-011 infer-012 infer-013 infer-014 infer-015 infer-016 infer-017 infer-018 infer-019 infer-020 infer-021 infer-022 infer-023 infer-024 infer-025 infer-026 infer-027 infer-028 infer-029 infer-030 infer-031 infer-032 infer-033 infer-034 infer-035 infer-036 infer-037 infer-038 infer-039 infer-040 infer-041 infer-042 infer-043
#   trainer nodes   (16): train-000 train-001 train-002 train-003 train-004 train-005 train-006 train-007 train-008 train-009 train-010 train-011 train-012 train-013 train-014 train-015  (the first also runs vf-serve and the orchestrator)
# PRIME_RL_DIR: a prime-rl v0.5.0 checkout with its venv; VF_VENV: the venv with verifiers-sdk + the envs.
set -euo pipefail
RUN_DIR="${RUN_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
PRIME_RL_DIR="${PRIME_RL_DIR:?set PRIME_RL_DIR to a prime-rl v0.5.0 checkout}"
VF_VENV="${VF_VENV:?set VF_VENV to the verifiers-sdk venv}"
export PATH="$VF_VENV/bin:$PATH"
INFER_HOSTS=(infer-000 infer-001 infer-002 infer-003 infer-004 infer-005 infer-006 infer-007 infer-008 infer-009 infer-010 infer-011 infer-012 infer-013 infer-014 infer-015 infer-016 infer-017 infer-018 infer-019 infer-020 infer-021 infer-022 infer-023 infer-024 infer-025 infer-026 infer-027 infer-028 infer-029 infer-030 infer-031 infer-032 infer-033 infer-034 infer-035 infer-036 infer-037 infer-038 infer-039 infer-040 infer-041 infer-042 infer-043)
TRAIN_HOSTS=(train-000 train-001 train-002 train-003 train-004 train-005 train-006 train-007 train-008 train-009 train-010 train-011 train-012 train-013 train-014 train-015)
GPUS_PER_NODE=8
MASTER_ADDR="${TRAIN_HOSTS[0]}"
MASTER_PORT="${MASTER_PORT:-29500}"
ME="$(hostname -s)"
mkdir -p "$RUN_DIR/logs"
cd "$PRIME_RL_DIR"

for i in "${!INFER_HOSTS[@]}"; do
  if [ "${INFER_HOSTS[$i]}" = "$ME" ]; then
    echo "[$ME] inference node $i -> http://$ME:8000/v1"
    exec uv run inference @ "$RUN_DIR/inference.toml" --server.host 0.0.0.0 --server.port 8000
  fi
done

for i in "${!TRAIN_HOSTS[@]}"; do
  if [ "${TRAIN_HOSTS[$i]}" = "$ME" ]; then
    if [ "$i" -eq 0 ]; then
      echo "[$ME] env servers + orchestrator"
      vf-serve math-env --host 127.0.0.1 --port 8100 --zmq-port 5100 --max-concurrent 8192 --workers 8 --max-seq-len 65536 --score-rollouts > "$RUN_DIR/logs/vf-serve-0.log" 2>&1 &
      vf-serve code-env --host 127.0.0.1 --port 8101 --zmq-port 5101 --max-concurrent 8192 --workers 8 --max-seq-len 65536 --score-rollouts > "$RUN_DIR/logs/vf-serve-1.log" 2>&1 &
      for url in http://127.0.0.1:8100/health http://127.0.0.1:8101/health; do
        until curl -sf "$url" > /dev/null; do sleep 2; done
      done
      uv run orchestrator @ "$RUN_DIR/orchestrator.toml" > "$RUN_DIR/logs/orchestrator.log" 2>&1 &
    fi
    echo "[$ME] trainer node $i of ${#TRAIN_HOSTS[@]}"
    exec uv run torchrun --nnodes="${#TRAIN_HOSTS[@]}" --nproc-per-node="$GPUS_PER_NODE" --node-rank="$i" \
      --rdzv-endpoint="$MASTER_ADDR:$MASTER_PORT" --rdzv-id="vf-train-${SLURM_JOB_ID:-0}" \
      -m prime_rl.trainer.rl.train @ "$RUN_DIR/trainer.toml"
  fi
done
echo "[$ME] is neither an inference nor a trainer node of this run" >&2
exit 1
