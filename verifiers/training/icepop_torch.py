"""The IcePop loss of ``verifiers.training.icepop`` in torch, differentiable by autograd.

Same formula, masks and metrics as the NumPy ``icepop_loss`` (its docstring is the specification); only the
gradient comes from autograd instead of being returned. torch is imported by this module alone, so
``verifiers.training`` works without it (``pip install 'verifiers-sdk[torch]'``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from verifiers.training.icepop import KL_LOG_RATIO_CLIP, log_bounds


@dataclass(frozen=True, slots=True)
class IcePopTorchResult:
    """``loss`` (a 0-d tensor; call ``.backward()``) and ``metrics`` (floats, computed without grad)."""

    loss: torch.Tensor
    metrics: dict[str, float]


def icepop_loss_torch(
    logp_new: torch.Tensor,
    logp_old: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    alpha: float = 0.5,
    beta: float = 5.0,
    ratio_floor: float = 1e-5,
    *,
    normalizer: float | None = None,
) -> IcePopTorchResult:
    """``icepop_loss`` with autograd: the loss is differentiable w.r.t. ``logp_new`` (``logp_old`` is
    treated as data). Shapes as in ``icepop_loss``; the computation runs in ``logp_new``'s dtype."""
    if logp_new.dim() != 2:
        raise ValueError(f"logp_new must be (batch, seq), got shape {tuple(logp_new.shape)}")
    if logp_old.shape != logp_new.shape or mask.shape != logp_new.shape:
        raise ValueError(
            f"logp_new {tuple(logp_new.shape)}, logp_old {tuple(logp_old.shape)} and mask "
            f"{tuple(mask.shape)} must have one shape"
        )
    if mask.dtype != torch.bool and not ((mask == 0) | (mask == 1)).all():
        raise ValueError("mask must hold only 0/1 (or booleans)")
    m = mask.to(torch.bool)
    adv = advantages.to(logp_new.dtype)
    if adv.shape == logp_new.shape[:1]:
        adv = adv[:, None]
    elif adv.shape != logp_new.shape:
        raise ValueError(
            f"advantages must be (batch,) or (batch, seq), got {tuple(adv.shape)} for {tuple(logp_new.shape)}"
        )
    log_alpha, log_beta, log_floor = log_bounds(alpha, beta, ratio_floor)
    if not torch.isfinite(torch.where(m, adv.detach(), 0.0)).all():
        raise ValueError("advantages must be finite on mask tokens")
    zero = torch.zeros((), dtype=logp_new.dtype, device=logp_new.device)
    # torch.where's backward sends zeros (not 0 * NaN) to the branch it did not take: padding stays inert.
    log_ratio = torch.where(m, logp_new - logp_old.detach().to(logp_new.dtype), zero)
    with torch.no_grad():
        if torch.isnan(log_ratio).any():
            raise ValueError("logp_new - logp_old is NaN on a mask token")
        low = m & (log_ratio < log_alpha)
        high = m & (log_ratio > log_beta)
        dropped = (m & (log_ratio < log_floor)).any(dim=1)
        keep = m & ~low & ~high & ~dropped[:, None]
    # exp only of kept log-ratios (within [log alpha, log beta]); the rest never reach exp.
    ratio = torch.exp(torch.where(keep, log_ratio, zero)) * keep
    n_mask = int(m.sum().item())
    n = float(normalizer) if normalizer is not None else float(max(n_mask, 1))
    if not n > 0:
        raise ValueError(f"normalizer must be positive, got {normalizer}")
    loss = -(ratio * adv).sum() / n
    with torch.no_grad():
        denom = max(n_mask, 1)
        clipped = log_ratio.detach().clamp(-KL_LOG_RATIO_CLIP, KL_LOG_RATIO_CLIP)
        kl = torch.where(m, torch.expm1(clipped) - clipped, zero)
        metrics = {
            "masked_low": float(low.sum().item()) / denom,
            "masked_high": float(high.sum().item()) / denom,
            "kept": float(keep.sum().item()) / denom,
            "sequences_dropped": float(dropped.sum().item()),
            "mismatch_kl": float(kl.sum().item()) / denom,
        }
    return IcePopTorchResult(loss=loss, metrics=metrics)


__all__ = ["IcePopTorchResult", "icepop_loss_torch"]
