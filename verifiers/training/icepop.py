"""The IcePop-style masked importance-sampling policy-gradient loss INTELLECT-3 trained with, in NumPy.

Notation, for a batch of ``B`` sequences of ``T`` positions (padded):

- ``m[b, t]`` — the loss mask: 1 for a token the loss trains on (the model's sampled tokens), 0 for prompt,
  environment and padding positions;
- ``l[b, t] = logp_new[b, t] - logp_old[b, t]`` on mask tokens (0 elsewhere): the log of the importance
  ratio ``r = pi_train / pi_inference`` between the trainer's and the inference server's probability of the
  sampled token, computed and compared in log space so extreme ratios never overflow;
- ``A[b]`` — the sequence's advantage (``group_advantages``), or ``A[b, t]`` per token.

Masking (double-sided, plus a sequence floor):

- ``low  = m & (r < alpha)`` and ``high = m & (r > beta)``: such tokens get no gradient; ``alpha`` and
  ``beta`` themselves are kept (the interval is closed);
- a sequence whose smallest mask-token ratio is below ``ratio_floor`` is dropped whole (one token the
  inference engine sampled but the trainer finds all but impossible poisons the sequence);
- ``keep = m & ~low & ~high & ~dropped``.

Loss and gradient (``N`` = the number of mask tokens in the batch, or ``normalizer`` when given — masked
and dropped tokens still count, so masking never inflates the weight of the tokens left)::

    loss = -(1 / N) * sum_{b,t} keep[b, t] * r[b, t] * A[b]
    d loss / d logp_new[b, t] = -(1 / N) * keep[b, t] * r[b, t] * A[b]      (since dr/dlogp_new = r)

This is prime-rl's token-level form (``-(ratio * advantages)[keep_mask].sum() / loss_scale``, ``loss_scale``
= the batch's loss-mask tokens). On-policy (``logp_new == logp_old``, so ``r = 1`` and nothing is masked)
the gradient is exactly REINFORCE's, ``-(1/N) * m * A``, the gradient of
``-(1/N) * sum m * A * logp_new``, and the loss value is that surrogate's importance-weighted form at
``r = 1``: ``-(1/N) * sum m * A``.

Metrics (fractions over mask tokens; 0 for an empty batch): ``masked_low``, ``masked_high``, ``kept``
(tokens that carry gradient), ``sequences_dropped`` (a count), ``mismatch_kl`` — the mean over mask tokens
of ``r - 1 - log r`` (an estimate of KL(pi_inference || pi_train) from the inference samples), with
``log r`` clipped to +-20 for this metric only so that it stays finite at extreme ratios.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

#: ``|log r|`` beyond this is clipped when computing the ``mismatch_kl`` metric (never the loss).
KL_LOG_RATIO_CLIP = 20.0


@dataclass(frozen=True, slots=True)
class IcePopResult:
    """``loss`` (a float), ``grad`` = d loss / d ``logp_new`` (shape of ``logp_new``), and ``metrics``."""

    loss: float
    grad: NDArray[np.float64]
    metrics: dict[str, float]


def log_bounds(alpha: float, beta: float, ratio_floor: float) -> tuple[float, float, float]:
    """``(log alpha, log beta, log ratio_floor)`` after checking the bounds (``ratio_floor=0`` drops
    nothing); shared with the torch version so both compare against the same numbers."""
    if not (alpha > 0 and math.isfinite(alpha)):
        raise ValueError(f"alpha must be a positive number, got {alpha}")
    if not (beta >= alpha and math.isfinite(beta)):
        raise ValueError(f"beta must be a finite number >= alpha, got {beta} (alpha={alpha})")
    if not (ratio_floor >= 0 and math.isfinite(ratio_floor)):
        raise ValueError(f"ratio_floor must be >= 0, got {ratio_floor}")
    return math.log(alpha), math.log(beta), math.log(ratio_floor) if ratio_floor > 0 else -math.inf


def _arrays(
    logp_new: ArrayLike, logp_old: ArrayLike, advantages: ArrayLike, mask: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.bool_]]:
    new = np.asarray(logp_new, dtype=np.float64)
    old = np.asarray(logp_old, dtype=np.float64)
    m = np.asarray(mask)
    if new.ndim != 2:
        raise ValueError(f"logp_new must be (batch, seq), got shape {new.shape}")
    if old.shape != new.shape or m.shape != new.shape:
        raise ValueError(f"logp_new {new.shape}, logp_old {old.shape} and mask {m.shape} must have one shape")
    if m.dtype != np.bool_:
        if not np.all((m == 0) | (m == 1)):
            raise ValueError("mask must hold only 0/1 (or booleans)")
        m = m.astype(np.bool_)
    adv = np.asarray(advantages, dtype=np.float64)
    if adv.shape == new.shape[:1]:
        adv = adv[:, None]
    elif adv.shape != new.shape:
        raise ValueError(f"advantages must be (batch,) or (batch, seq), got {adv.shape} for {new.shape}")
    if not np.all(np.isfinite(np.where(m, adv, 0.0))):
        raise ValueError("advantages must be finite on mask tokens")
    return new, old, adv, m


def icepop_loss(
    logp_new: ArrayLike,
    logp_old: ArrayLike,
    advantages: ArrayLike,
    mask: ArrayLike,
    alpha: float = 0.5,
    beta: float = 5.0,
    ratio_floor: float = 1e-5,
    *,
    normalizer: float | None = None,
) -> IcePopResult:
    """The IcePop loss of the module docstring and its gradient w.r.t. ``logp_new``.

    ``logp_new`` (trainer), ``logp_old`` (inference server) and ``mask`` are ``(batch, seq)``; ``advantages``
    is ``(batch,)`` (one per sequence) or ``(batch, seq)``. Values off the mask are ignored (padding may be
    anything, NaN included). ``normalizer`` replaces ``N`` (e.g. the token count of the whole batch when
    this call sees one micro-batch). Ratios of ``exp(+-1000)`` or infinite log-probabilities on mask tokens
    are fine (masked or dropped); NaN on a mask token is an error.
    """
    new, old, adv, m = _arrays(logp_new, logp_old, advantages, mask)
    log_alpha, log_beta, log_floor = log_bounds(alpha, beta, ratio_floor)
    with np.errstate(invalid="ignore"):  # inf - inf off the mask is ignored; on it, it is an error below
        log_ratio = np.where(m, new - old, 0.0)
    if np.isnan(log_ratio).any():
        raise ValueError("logp_new - logp_old is NaN on a mask token")
    low = m & (log_ratio < log_alpha)
    high = m & (log_ratio > log_beta)
    dropped: NDArray[np.bool_] = np.asarray((m & (log_ratio < log_floor)).any(axis=1))
    keep = m & ~low & ~high & ~dropped[:, None]
    # exp only of kept log-ratios, which lie in [log alpha, log beta]: no overflow anywhere.
    ratio = np.exp(np.where(keep, log_ratio, 0.0)) * keep
    n_mask = int(m.sum())
    n = float(normalizer) if normalizer is not None else float(max(n_mask, 1))
    if not n > 0:
        raise ValueError(f"normalizer must be positive, got {normalizer}")
    weighted = ratio * adv
    loss = float(-weighted.sum() / n)
    grad = -weighted / n
    return IcePopResult(loss=loss, grad=grad, metrics=_metrics(log_ratio, m, low, high, keep, dropped))


def _metrics(
    log_ratio: NDArray[np.float64],
    m: NDArray[np.bool_],
    low: NDArray[np.bool_],
    high: NDArray[np.bool_],
    keep: NDArray[np.bool_],
    dropped: NDArray[np.bool_],
) -> dict[str, float]:
    n_mask = max(int(m.sum()), 1)
    clipped = np.clip(log_ratio, -KL_LOG_RATIO_CLIP, KL_LOG_RATIO_CLIP)
    kl = np.where(m, np.expm1(clipped) - clipped, 0.0)
    return {
        "masked_low": float(low.sum()) / n_mask,
        "masked_high": float(high.sum()) / n_mask,
        "kept": float(keep.sum()) / n_mask,
        "sequences_dropped": float(dropped.sum()),
        "mismatch_kl": float(kl.sum()) / n_mask,
    }


__all__ = ["KL_LOG_RATIO_CLIP", "IcePopResult", "icepop_loss", "log_bounds"]
