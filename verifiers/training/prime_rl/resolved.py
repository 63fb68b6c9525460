"""What prime-rl v0.5.0 resolves an ``rl.toml`` to, for the values the adapter depends on.

``RLConfig``'s auto-setup validators (``configs/rl.py``) pass shared values down to the components, and
each component's own validators run first, on the nested tables as written. The adapter needs the
outcome without importing prime-rl (``validate`` runs where it is not installed), so the rules for those
values are restated here, each with where the release does it. Values of the wrong type are ``None`` (the
``[keys]`` check reports them); nothing here raises.

- model names (``auto_setup_model``, rl.py:528): ``trainer.model.name`` ← ``[model] name``; the
  orchestrator's ← the inference model's name (which ← ``[model] name`` unless set) when there is an
  ``[inference]`` table, else ← ``[model] name``. The trainer's **tokenizer** is resolved earlier, by
  ``TrainerConfig.auto_setup_tokenizer`` (trainer.py:815) on the nested ``[trainer]`` table before
  ``[model] name`` is copied: unset, it becomes ``[trainer.model] name`` as written, else the default
  ``Qwen/Qwen3-0.6B`` — whatever ``[model]`` says (fixed upstream after v0.5.0);
- ``seq_len`` (``auto_setup_seq_len``, rl.py:573): a top-level ``seq_len`` fills the orchestrator's and
  the trainer model's where they are not set; default 2048 each;
- ``score_rollouts`` (orchestrator.py:1022 and orchestrator.py:180-190): training env servers score
  when ``[orchestrator.verification] enabled`` (default true); environments whose rubric scores groups
  never reach an external server (the bridge refuses them).
"""

from __future__ import annotations

from typing import Any

DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
DEFAULT_SEQ_LEN = 2048


def get(doc: Any, dotted: str, default: Any = None) -> Any:
    """``doc["a"]["b"]…`` for ``"a.b…"``, or ``default`` where a part is missing or not a table."""
    node: Any = doc
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            return default
        node = node[part]
    return node


def as_int(value: Any) -> int | None:
    """An integer setting, or ``None`` for a value of another type (``"lots"``, ``[6]``, ``True``)."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def _name(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def model_names(rl: dict[str, Any]) -> dict[str, str | None]:
    """Every model and tokenizer name the components of ``rl`` end up with, by config key."""
    top = _name(get(rl, "model.name"))
    written_trainer = _name(get(rl, "trainer.model.name"))
    tokenizer = _name(get(rl, "trainer.tokenizer.name"))
    if get(rl, "trainer.tokenizer.name") is None:
        tokenizer = written_trainer if get(rl, "trainer.model.name") is not None else DEFAULT_MODEL
    trainer = top if top is not None else (written_trainer or DEFAULT_MODEL)
    names: dict[str, str | None] = {
        "trainer.model.name": trainer,
        "trainer.tokenizer.name": tokenizer,
    }
    if isinstance(rl.get("inference"), dict):
        explicit = get(rl, "inference.model.name")
        inference = _name(explicit) if explicit is not None else (top or DEFAULT_MODEL)
        names["inference.model.name"] = inference
        names["orchestrator.model.name"] = inference if top is not None else _orchestrator_name(rl)
    else:
        names["orchestrator.model.name"] = top if top is not None else _orchestrator_name(rl)
    return names


def _orchestrator_name(rl: dict[str, Any]) -> str | None:
    written = get(rl, "orchestrator.model.name")
    return _name(written) if written is not None else DEFAULT_MODEL


def seq_lens(rl: dict[str, Any]) -> tuple[int | None, int | None]:
    """``(orchestrator.seq_len, trainer.model.seq_len)`` as resolved; ``None`` where the value is not an
    integer."""
    shared = get(rl, "seq_len")
    fallback = shared if shared is not None else DEFAULT_SEQ_LEN
    return as_int(get(rl, "orchestrator.seq_len", fallback)), as_int(
        get(rl, "trainer.model.seq_len", fallback)
    )


def score_rollouts(rl: dict[str, Any]) -> bool:
    """Whether prime-rl would have its training env servers score rollouts."""
    return get(rl, "orchestrator.verification.enabled", True) is not False


__all__ = ["DEFAULT_MODEL", "DEFAULT_SEQ_LEN", "as_int", "get", "model_names", "score_rollouts", "seq_lens"]
