"""Group-relative advantages, as INTELLECT-3 computed them: a rollout's reward minus its group's mean,
with no division by the group's standard deviation (so a group's advantages keep the reward's scale and an
almost-solved prompt is not blown up to unit variance)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray


def group_advantages(
    rewards: ArrayLike,
    group_size: int,
    length_weighted: bool = False,
    lengths: ArrayLike | None = None,
) -> NDArray[np.float64]:
    """Advantages of a flat batch of rewards, grouped in consecutive runs of ``group_size`` (the rollouts of
    one prompt): ``A_i = r_i - b_g`` for rollout ``i`` of group ``g``.

    - ``length_weighted=False``: ``b_g`` is the group's mean reward, so each group's advantages sum to 0.
    - ``length_weighted=True``: ``b_g = sum(r_i * l_i) / sum(l_i)`` with ``l_i`` the completion lengths
      (``lengths``, required), so the length-weighted sum ``sum(l_i * A_i)`` is 0 per group: with a
      token-sum loss every group then adds no net push to the policy.

    Rewards must be finite: a rollout that could not be scored (reward ``None``) has no place in a group's
    baseline; leave it out (and mask it) before calling, never score it 0.
    """
    r = np.asarray(rewards, dtype=np.float64)
    if r.ndim != 1:
        raise ValueError(f"rewards must be a flat sequence, got shape {r.shape}")
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1, got {group_size}")
    if r.size % group_size:
        raise ValueError(f"{r.size} rewards do not split into groups of {group_size}")
    if not np.all(np.isfinite(r)):
        raise ValueError("rewards must be finite (drop unscored rollouts before computing advantages)")
    groups = r.reshape(-1, group_size)
    if not length_weighted:
        if lengths is not None:
            raise ValueError("lengths are only used with length_weighted=True")
        baseline = groups.mean(axis=1, keepdims=True)
    else:
        if lengths is None:
            raise ValueError("length_weighted=True needs the completion lengths")
        w = np.asarray(lengths, dtype=np.float64)
        if w.shape != r.shape:
            raise ValueError(f"lengths has shape {w.shape}, rewards {r.shape}")
        if np.any(w < 0) or not np.all(np.isfinite(w)):
            raise ValueError("lengths must be finite and non-negative")
        w = w.reshape(-1, group_size)
        total = w.sum(axis=1, keepdims=True)
        if np.any(total == 0):
            raise ValueError("a group's lengths sum to 0: its length-weighted mean is undefined")
        baseline = (groups * w).sum(axis=1, keepdims=True) / total
    out: NDArray[np.float64] = (groups - baseline).reshape(-1)
    return out


__all__ = ["group_advantages"]
