"""The CPU loop's policy: a table of logits (prompt × answer), served by the token server.

The "model" is a table of logits, one row per distinct prompt and one column per answer of a small
answer set: a reply is one answer, drawn from ``softmax(logits[prompt] / temperature)``. It is served by
``token_server.TokenServer`` (the vLLM-compatible server the prime-rl orchestrator tests use too) over the
tiny ChatML tokenizer: the answer's tokens, ending with ``<|im_end|>``; the logprob of the choice goes on
its first token, and the rest of the answer follows deterministically (logprob 0). A trainer therefore
finds a sample's table entry from the rollout's prompt (``prompt_key``) and its answer text, and its
new logprob from the table, as a real trainer maps tokens to its model's inputs.

Weights travel as prime-rl's do: the trainer writes them to a directory (``weights.json``: ``{"step":
n, "logits": {prompt key: [...]}}``) and tells the server to load it (``POST /update_weights
{"weight_dir": ...}``); prompts the trainer has not sent yet keep their rows. Requests in flight finish
with whichever weights they sampled from.

Run standalone: ``python policy_server.py --port 8001`` prints ``policy server listening http://…/v1``.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

sys.path.insert(0, str(Path(__file__).resolve().parent))
from token_server import TokenServer

#: The answer set of the boolean-expression slice of logic-env: two valid answers (one correct per prompt),
#: a tagged non-answer and an untagged one (no ``<answer>`` block scores 0).
ANSWERS: tuple[str, ...] = (
    "<answer>True</answer>",
    "<answer>False</answer>",
    "<answer>Unknown</answer>",
    "True",
)
#: The model name the server lists and requests name.
MODEL = "tabular"
WEIGHTS_FILE = "weights.json"


def log_softmax(logits: NDArray[np.float64]) -> NDArray[np.float64]:
    z = logits - logits.max(axis=-1, keepdims=True)
    out: NDArray[np.float64] = z - np.log(np.exp(z).sum(axis=-1, keepdims=True))
    return out


def prompt_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """The table row of a prompt: its messages as text (what the server and the trainer both see)."""
    return "\n".join(f"{m.get('role')}: {m.get('content')}" for m in messages)


class TabularPolicy:
    """The server's weights: one row of logits per prompt seen (a new prompt starts uniform). Read and
    written on the server's event loop only, so no lock is needed."""

    def __init__(self, answers: Sequence[str], seed: int = 0, temperature: float = 1.0) -> None:
        self.answers = tuple(answers)
        self.rows: dict[str, NDArray[np.float64]] = {}
        self.step = 0
        self.temperature = temperature
        self.rng = np.random.default_rng(seed)

    def reply(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> tuple[str, float]:
        row = self.rows.setdefault(prompt_key(messages), np.zeros(len(self.answers)))
        logp = log_softmax(row / max(self.temperature, 1e-6))
        action = int(self.rng.choice(len(self.answers), p=np.exp(logp)))
        return self.answers[action], float(logp[action])

    def load(self, weight_dir: Path) -> None:
        data = json.loads((weight_dir / WEIGHTS_FILE).read_text())
        logits = {str(k): np.asarray(v, dtype=np.float64) for k, v in data["logits"].items()}
        bad = [k for k, v in logits.items() if v.shape != (len(self.answers),)]
        if bad:
            raise ValueError(f"{len(bad)} rows do not have {len(self.answers)} logits")
        self.rows.update(logits)
        self.step = int(data["step"])


def write_weights(weight_dir: Path, logits: Mapping[str, NDArray[np.float64]], step: int) -> Path:
    """What the trainer publishes for ``/update_weights`` (a temporary file renamed: never half-read)."""
    weight_dir.mkdir(parents=True, exist_ok=True)
    tmp = weight_dir / (WEIGHTS_FILE + ".tmp")
    tmp.write_text(json.dumps({"step": step, "logits": {k: v.tolist() for k, v in logits.items()}}))
    tmp.rename(weight_dir / WEIGHTS_FILE)
    return weight_dir


def policy_server(seed: int = 0, host: str = "127.0.0.1", port: int = 0) -> TokenServer:
    """The token server with a fresh tabular policy (not started)."""
    return TokenServer(TabularPolicy(ANSWERS, seed=seed), model=MODEL, host=host, port=port)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    server = policy_server(args.seed, args.host, args.port).start()
    print(f"policy server listening {server.url}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()
