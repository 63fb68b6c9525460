#!/usr/bin/env bash
# GPU smoke test of the training path, for a machine with an NVIDIA GPU (never part of the CPU test suite).
#
#   bash scripts/gpu_smoke.sh            # vLLM + vf-eval with token ids and logprobs
#   PRIME_RL_DIR=~/prime-rl bash scripts/gpu_smoke.sh   # ... plus a 2-step single-GPU RL run via vf-train
#
# 1. installs vLLM from PyPI into its own venv (.venv-vllm);
# 2. builds a tiny random-weight Llama and a byte-level BPE tokenizer locally (no model hub download);
# 3. serves it with vLLM and runs `vf-eval math-env` against it asking for logprobs and token ids, and
#    checks every rollout recorded prompt_ids / completion_ids / completion_logprobs of matching lengths;
# 4. if PRIME_RL_DIR points at a prime-rl v0.5.0 checkout with its venv: renders a single-node run,
#    shrinks it to one GPU, validates it, and runs inference + orchestrator + trainer for 2 steps with the
#    bridge package and the custom IcePop loss installed into prime-rl's venv.
# Prints what it verified at the end.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
WORK="${WORK:-$ROOT/.gpu-smoke}"
PORT="${PORT:-8011}"
VERIFIED=()
mkdir -p "$WORK"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L | grep -q '^GPU '; then
  echo "gpu_smoke: no NVIDIA GPU here (nvidia-smi -L lists none); nothing to do" >&2
  exit 2
fi
nvidia-smi -L

VF_PY="$ROOT/.venv/bin/python"
[ -x "$VF_PY" ] || { echo "gpu_smoke: run scripts/setup.sh first (no .venv)" >&2; exit 2; }

# --- 1. vLLM ----------------------------------------------------------------------------------------
if [ ! -x "$ROOT/.venv-vllm/bin/vllm" ]; then
  python3 -m venv "$ROOT/.venv-vllm"
  "$ROOT/.venv-vllm/bin/pip" install -q --upgrade pip
  "$ROOT/.venv-vllm/bin/pip" install -q vllm
fi
VLLM_PY="$ROOT/.venv-vllm/bin/python"
VERIFIED+=("vLLM $("$VLLM_PY" -c 'import vllm; print(vllm.__version__)') installed from PyPI")

# --- 2. a tiny model, built here ------------------------------------------------------------------------
MODEL_DIR="$WORK/tiny-llama"
if [ ! -f "$MODEL_DIR/config.json" ]; then
  "$VLLM_PY" - "$MODEL_DIR" <<'PY'
import sys
from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

out = Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
corpus = [
    "What is 2 + 2? The answer is 4.", "Solve for x: x + 3 = 5. x = 2.", "\\boxed{42}",
    "<|user|> <|assistant|> <|end|>", "Please reason step by step, and put your final answer within \\boxed{}.",
] * 200
tok = Tokenizer(models.BPE())
tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
tok.decoder = decoders.ByteLevel()
specials = ["<|pad|>", "<|bos|>", "<|end|>", "<|user|>", "<|assistant|>", "<|system|>"]
tok.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=2048, special_tokens=specials,
                                                    initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
fast = PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<|bos|>", eos_token="<|end|>", pad_token="<|pad|>")
fast.chat_template = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}<|end|>{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}"
)
fast.save_pretrained(out)
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=len(fast), hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                  num_attention_heads=4, num_key_value_heads=4, max_position_embeddings=2048,
                  bos_token_id=fast.bos_token_id, eos_token_id=fast.eos_token_id, pad_token_id=fast.pad_token_id)
LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(out)
print(f"built {out}")
PY
fi
VERIFIED+=("tiny Llama + BPE tokenizer built locally at $MODEL_DIR")

# --- 3. vLLM serving it, vf-eval with token ids and logprobs --------------------------------------------
"$ROOT/.venv-vllm/bin/vllm" serve "$MODEL_DIR" --served-model-name tiny --port "$PORT" \
  --max-model-len 2048 --gpu-memory-utilization 0.3 --return-tokens-as-token-ids > "$WORK/vllm.log" 2>&1 &
VLLM_PID=$!
trap 'kill $VLLM_PID 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
  kill -0 $VLLM_PID 2>/dev/null || { tail -50 "$WORK/vllm.log"; exit 1; }
  sleep 2
done
"$ROOT/.venv/bin/vf-eval" math-env -m tiny -b "http://127.0.0.1:$PORT/v1" -n 8 -r 2 \
  -S '{"max_tokens": 64, "temperature": 1.0, "logprobs": true, "extra_body": {"return_token_ids": true}}' \
  -o "$WORK/eval" | tail -5
"$VF_PY" - "$WORK/eval" <<'PY'
import json, sys
from pathlib import Path

files = sorted(Path(sys.argv[1]).rglob("results.jsonl"))
assert files, "vf-eval wrote no results.jsonl"
rows = [json.loads(line) for line in files[-1].read_text().splitlines() if line.strip()]
turns = [t for r in rows for t in (r.get("turns") or [])]
assert turns, "no per-turn records"
for t in turns:
    assert t.get("prompt_ids") and t.get("completion_ids"), t.keys()
    assert len(t["completion_ids"]) == len(t["completion_logprobs"]), "token / logprob lengths differ"
print(f"{len(rows)} rollouts, {len(turns)} model calls, all with prompt_ids/completion_ids/logprobs")
PY
VERIFIED+=("vf-eval math-env against vLLM recorded token ids and logprobs with consistent lengths")

# --- 4. one short single-GPU RL run through the adapter ----------------------------------------------------
if [ -n "${PRIME_RL_DIR:-}" ] && [ -x "$PRIME_RL_DIR/.venv/bin/python" ]; then
  kill $VLLM_PID 2>/dev/null || true
  wait $VLLM_PID 2>/dev/null || true
  RUN="$WORK/rl-run"
  rm -rf "$RUN"
  "$ROOT/.venv/bin/vf-train" render --preset single-node --env math-env --model "$MODEL_DIR" --out "$RUN" \
    --set deployment.num_train_gpus=1 --set deployment.num_infer_gpus=1 --set inference.parallel.dp=1 \
    --set seq_len=1024 --set inference.model.max_model_len=1024 --set vf_train.prompt_budget=512 \
    --set orchestrator.sampling.max_tokens=256 \
    --set orchestrator.batch_size=16 --set orchestrator.rollouts_per_example=4 --set max_steps=2 \
    --set inference.gpu_memory_utilization=0.3 --set "output_dir='$RUN/outputs'"
  "$ROOT/.venv/bin/vf-train" validate "$RUN"
  # One GPU: run the three components by hand on GPU 0 (the rl launcher gives each its own GPUs).
  "$VF_PY" - "$RUN" <<'PY'
import sys, tomllib, tomli_w
from pathlib import Path
from verifiers.training.prime_rl.render import split_documents
from verifiers.training.prime_rl.spec import RunSpec

run = Path(sys.argv[1])
rl = tomllib.loads((run / "rl.toml").read_text())
for name, doc in split_documents(rl, RunSpec.read(run)).items():
    (run / name).write_text(tomli_w.dumps(doc))
PY
  uv pip install -q --python "$PRIME_RL_DIR/.venv/bin/python" "$RUN"/packages/*/
  "$ROOT/.venv/bin/vf-serve" math-env --port 8100 --zmq-port 5100 > "$RUN/vf-serve.log" 2>&1 &
  SERVE_PID=$!
  trap 'kill $VLLM_PID $SERVE_PID ${INF_PID:-} ${ORCH_PID:-} 2>/dev/null || true' EXIT
  until curl -sf http://127.0.0.1:8100/health >/dev/null; do sleep 1; done
  (cd "$PRIME_RL_DIR" && CUDA_VISIBLE_DEVICES=0 uv run inference @ "$RUN/inference.toml" > "$RUN/inference.log" 2>&1) &
  INF_PID=$!
  until curl -sf http://127.0.0.1:8000/v1/models >/dev/null; do sleep 2; kill -0 $INF_PID || exit 1; done
  (cd "$PRIME_RL_DIR" && uv run orchestrator @ "$RUN/orchestrator.toml" > "$RUN/orchestrator.log" 2>&1) &
  ORCH_PID=$!
  (cd "$PRIME_RL_DIR" && CUDA_VISIBLE_DEVICES=0 uv run trainer @ "$RUN/trainer.toml" 2>&1 | tee "$RUN/trainer.log" | tail -20)
  grep -q "vf_icepop_loss\|masked_low\|Step 1\|step 1" "$RUN/trainer.log" "$RUN/orchestrator.log" \
    && VERIFIED+=("2-step single-GPU prime-rl run through vf-train (bridge + vf-serve + custom IcePop loss)") \
    || VERIFIED+=("prime-rl run started; check $RUN/*.log (no step marker found)")
else
  VERIFIED+=("RL run skipped: set PRIME_RL_DIR to a prime-rl v0.5.0 checkout with its venv")
fi

echo
echo "gpu_smoke verified:"
for v in "${VERIFIED[@]}"; do echo "  - $v"; done
