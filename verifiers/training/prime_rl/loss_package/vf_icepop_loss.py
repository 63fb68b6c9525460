"""INTELLECT-3's IcePop-style masked importance-sampling loss for prime-rl v0.5.0 (torch only).

prime-rl v0.5.0 has no such built-in (its default loss masks by probability *difference*, ``ipo_mask_low``
/ ``ipo_mask_high``; the ratio masks ``token_mask_low/high`` and ``sequence_mask_low/high`` were removed on
2026-03-02 per its CHANGELOG), but it calls a custom loss per sample::

    [trainer.loss]
    type = "custom"
    import_path = "vf_icepop_loss.icepop_loss"
    kwargs = { alpha = 0.5, beta = 5.0, ratio_floor = 1e-5 }

as ``fn(inputs: LossInputs, **kwargs) -> LossOutputs`` (src/prime_rl/trainer/rl/loss.py), sums the
per-sample losses of a step and divides by ``loss_scale`` = the number of loss-mask tokens
(trainer/rl/train.py). So one sample's loss here is the *unnormalised* sum::

    loss = -sum_t keep[t] * r[t] * A[t],   r = exp(trainer_logprobs - inference_logprobs)

with ``keep`` = loss-mask tokens whose ratio lies in ``[alpha, beta]``, and nothing kept when the sample's
smallest mask-token ratio is below ``ratio_floor`` (the sample is dropped whole). Masked and dropped tokens
still count in prime-rl's ``loss_scale``. Summed over a batch and divided by its mask-token count this is
exactly ``verifiers.training.icepop_loss`` (the tests check it, values and gradients). Ratios are compared
in log space; ``exp`` only ever sees kept log-ratios, so extreme ratios cannot overflow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch

#: ``|log r|`` beyond this is clipped for the ``mismatch_kl`` metric only (as ``verifiers.training``).
KL_LOG_RATIO_CLIP = 20.0


@dataclass
class LossOutputs:
    """Same fields as prime-rl's ``LossOutputs`` (the trainer reads ``.loss`` and ``.metrics``)."""

    loss: torch.Tensor
    metrics: dict[str, torch.Tensor]


def _outputs(loss: torch.Tensor, metrics: dict[str, torch.Tensor]) -> Any:
    try:  # prime-rl's own dataclass when it is importable (in prime-rl's venv)
        from prime_rl.trainer.rl.loss import LossOutputs as PrimeLossOutputs
    except ImportError:
        return LossOutputs(loss=loss, metrics=metrics)
    return PrimeLossOutputs(loss=loss, metrics=metrics)


def check_kwargs(alpha: Any = 0.5, beta: Any = 5.0, ratio_floor: Any = 1e-5) -> tuple[float, float, float]:
    """The loss's arguments, checked (no torch needed: ``vf-train validate`` calls this before a GPU
    step would): ``0 < alpha <= 1 <= beta``, ``alpha < beta``, ``0 < ratio_floor < 1``, all finite numbers.
    Returns them as floats; raises ``TypeError`` / ``ValueError`` naming the argument. An unknown keyword
    is a ``TypeError`` too, as Python makes it."""
    values = {"alpha": alpha, "beta": beta, "ratio_floor": ratio_floor}
    for name, value in values.items():
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"{name} must be a number, not {value!r}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, not {value!r}")
    a, b, floor = float(alpha), float(beta), float(ratio_floor)
    if not 0 < a <= 1:
        raise ValueError(
            f"alpha must be in (0, 1] (tokens with ratio < alpha get no gradient), not {alpha!r}"
        )
    if not (b >= 1 and b > a):
        raise ValueError(
            f"beta must be >= 1 and > alpha {alpha!r} (tokens with ratio > beta get no gradient), not {beta!r}"
        )
    if not 0 < floor < 1:
        raise ValueError(
            f"ratio_floor must be in (0, 1) (a sample with a smaller ratio is dropped), not {ratio_floor!r}"
        )
    return a, b, floor


def _log_bounds(alpha: float, beta: float, ratio_floor: float) -> tuple[float, float, float]:
    a, b, floor = check_kwargs(alpha, beta, ratio_floor)
    return math.log(a), math.log(b), math.log(floor)


def icepop_loss(inputs: Any, alpha: float = 0.5, beta: float = 5.0, ratio_floor: float = 1e-5) -> Any:
    """One sample's loss. ``inputs`` is prime-rl's ``LossInputs``: ``trainer_logprobs``,
    ``inference_logprobs``, ``advantages`` (per token) and ``loss_mask`` (bool), all of shape ``(seq,)``;
    ``teacher_logprobs`` is ignored."""
    import torch

    new: torch.Tensor = inputs.trainer_logprobs
    old = inputs.inference_logprobs.detach().to(new.dtype)
    adv = inputs.advantages.detach().to(new.dtype)
    m = inputs.loss_mask.to(torch.bool)
    log_alpha, log_beta, log_floor = _log_bounds(alpha, beta, ratio_floor)
    zero = torch.zeros((), dtype=new.dtype, device=new.device)
    log_ratio = torch.where(m, new - old, zero)
    with torch.no_grad():
        low = m & (log_ratio < log_alpha)
        high = m & (log_ratio > log_beta)
        dropped = bool((m & (log_ratio < log_floor)).any().item())
        keep = m & ~low & ~high & (not dropped)
    ratio = torch.exp(torch.where(keep, log_ratio, zero)) * keep
    loss = -(ratio * adv).sum()
    with torch.no_grad():
        denom = torch.clamp_min(m.sum(), 1).to(new.dtype)
        clipped = log_ratio.detach().clamp(-KL_LOG_RATIO_CLIP, KL_LOG_RATIO_CLIP)
        kl = torch.where(m, torch.expm1(clipped) - clipped, zero)
        metrics = {
            "masked_low": low.sum().to(new.dtype) / denom,
            "masked_high": high.sum().to(new.dtype) / denom,
            "kept": keep.sum().to(new.dtype) / denom,
            "sequence_dropped": torch.tensor(float(dropped), dtype=new.dtype, device=new.device),
            "mismatch_kl": kl.sum() / denom,
        }
    return _outputs(loss, metrics)
