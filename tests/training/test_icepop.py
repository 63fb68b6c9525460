"""The NumPy IcePop loss: its formula, masks, gradient and numerical safety."""

from __future__ import annotations

import math

import numpy as np
import pytest

from verifiers.training import icepop_loss


def batch(seed: int = 0, b: int = 4, t: int = 6, spread: float = 0.3) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    old = np.log(rng.uniform(0.05, 0.95, size=(b, t)))
    new = old + rng.normal(0, spread, size=(b, t))
    adv = rng.normal(0, 1, size=b)
    mask = rng.uniform(size=(b, t)) < 0.8
    mask[:, 0] = True
    return new, old, adv, mask


def test_on_policy_equals_reinforce() -> None:
    _, old, adv, mask = batch()
    res = icepop_loss(old, old, adv, mask)
    n = mask.sum()
    # REINFORCE: loss -(1/N) sum m * A * logp; its gradient -(1/N) m * A. The IS surrogate's value at r = 1.
    np.testing.assert_array_equal(res.grad, -(mask * adv[:, None]) / n)
    assert res.loss == pytest.approx(-(mask * adv[:, None]).sum() / n, abs=1e-15)
    assert res.metrics["kept"] == 1.0 and res.metrics["mismatch_kl"] == 0.0
    assert res.metrics["masked_low"] == res.metrics["masked_high"] == res.metrics["sequences_dropped"] == 0


def test_formula_off_policy() -> None:
    new, old, adv, mask = batch(spread=2.0)
    res = icepop_loss(new, old, adv, mask, alpha=0.5, beta=5.0, ratio_floor=1e-5)
    r = np.exp(new - old)
    keep = mask & (r >= 0.5) & (r <= 5.0)
    keep &= ~((mask & (r < 1e-5)).any(axis=1))[:, None]
    expected = -(keep * r * adv[:, None]) / mask.sum()
    np.testing.assert_allclose(res.grad, expected, rtol=1e-12, atol=0)
    assert res.loss == pytest.approx(expected.sum(), rel=1e-12)
    assert res.metrics["masked_low"] == pytest.approx((mask & (r < 0.5)).sum() / mask.sum())
    assert res.metrics["masked_high"] == pytest.approx((mask & (r > 5.0)).sum() / mask.sum())


def test_masked_tokens_get_exactly_zero_gradient() -> None:
    new, old, adv, mask = batch(spread=3.0)
    new[~mask] = np.nan  # padding may hold anything
    res = icepop_loss(new, old, adv, mask)
    r = np.exp(np.where(mask, new - old, 0.0))
    outside = ~mask | (r < 0.5) | (r > 5.0)
    assert outside.any() and (mask & outside).any()
    assert np.all(res.grad[outside] == 0.0)
    assert np.all(np.isfinite(res.grad)) and math.isfinite(res.loss)


def test_alpha_and_beta_themselves_are_kept() -> None:
    alpha, beta = 0.5, 5.0
    old = np.zeros((1, 4))
    new = np.array([[math.log(alpha), math.log(beta), math.log(alpha) - 1e-9, math.log(beta) + 1e-9]])
    res = icepop_loss(new, old, np.array([1.0]), np.ones((1, 4), bool), alpha=alpha, beta=beta)
    np.testing.assert_allclose(res.grad[0, :2], [-alpha / 4, -beta / 4], rtol=1e-15)
    assert res.grad[0, 2] == 0.0 and res.grad[0, 3] == 0.0
    assert res.metrics["masked_low"] == 0.25 and res.metrics["masked_high"] == 0.25


def test_masked_tokens_still_count_in_the_normaliser() -> None:
    old = np.zeros((1, 4))
    new = np.array([[0.0, 0.0, 10.0, -10.0]])  # two tokens masked (high / low), two kept
    res = icepop_loss(new, old, np.array([2.0]), np.ones((1, 4)), ratio_floor=0.0)
    assert res.loss == pytest.approx(-(2.0 + 2.0) / 4)


def test_a_sequence_below_the_floor_is_dropped_whole() -> None:
    old = np.zeros((2, 3))
    new = np.array([[0.0, 0.1, math.log(1e-6)], [0.0, 0.1, math.log(1e-4)]])
    res = icepop_loss(new, old, np.array([1.0, 1.0]), np.ones((2, 3)), ratio_floor=1e-5)
    assert np.all(res.grad[0] == 0.0)
    assert res.grad[1, 0] != 0.0 and res.grad[1, 1] != 0.0 and res.grad[1, 2] == 0.0
    assert res.metrics["sequences_dropped"] == 1.0
    # the floor looks only at mask tokens
    mask = np.array([[1, 1, 0], [1, 1, 1]])
    assert icepop_loss(new, old, np.array([1.0, 1.0]), mask).metrics["sequences_dropped"] == 0.0


def test_finite_difference_gradient() -> None:
    new, old, adv, mask = batch(seed=3, spread=0.2)
    # keep every token strictly inside (alpha, beta) so the loss is smooth where we probe it
    new = old + np.clip(new - old, math.log(0.6), math.log(4.0))
    res = icepop_loss(new, old, adv, mask)
    eps = 1e-6
    fd = np.zeros_like(new)
    for idx in np.ndindex(new.shape):
        up, down = new.copy(), new.copy()
        up[idx] += eps
        down[idx] -= eps
        fd[idx] = (icepop_loss(up, old, adv, mask).loss - icepop_loss(down, old, adv, mask).loss) / (2 * eps)
    np.testing.assert_allclose(res.grad, fd, atol=1e-8)


@pytest.mark.parametrize("value", [1000.0, -1000.0, math.inf, -math.inf])
def test_extreme_log_ratios_stay_finite(value: float) -> None:
    new, old, adv, mask = batch()
    new[0, 0] = old[0, 0] + value
    new[1, :] = old[1, :] - value
    res = icepop_loss(new, old, adv, mask)
    assert math.isfinite(res.loss) and np.all(np.isfinite(res.grad))
    assert all(math.isfinite(v) for v in res.metrics.values())
    assert res.grad[0, 0] == 0.0 and np.all(res.grad[1] == 0.0)


def test_per_token_advantages_and_normalizer() -> None:
    new, old, adv, mask = batch()
    per_token = np.repeat(adv[:, None], new.shape[1], axis=1)
    a, b = icepop_loss(new, old, adv, mask), icepop_loss(new, old, per_token, mask)
    np.testing.assert_array_equal(a.grad, b.grad)
    half = icepop_loss(new, old, adv, mask, normalizer=2 * mask.sum())
    assert half.loss == pytest.approx(a.loss / 2)


def test_empty_mask_is_zero() -> None:
    res = icepop_loss(np.zeros((2, 3)), np.zeros((2, 3)), np.ones(2), np.zeros((2, 3)))
    assert res.loss == 0.0 and not res.grad.any() and res.metrics["kept"] == 0.0


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"mask": np.full((4, 6), 2)}, "0/1"),
        ({"logp_old": np.zeros((4, 5))}, "one shape"),
        ({"advantages": np.zeros(3)}, "advantages"),
        ({"alpha": 0.0}, "alpha"),
        ({"beta": 0.1}, "beta"),
        ({"ratio_floor": -1.0}, "ratio_floor"),
        ({"normalizer": 0.0}, "normalizer"),
    ],
)
def test_bad_input(change: dict[str, object], match: str) -> None:
    new, old, adv, mask = batch()
    kwargs: dict[str, object] = {"logp_new": new, "logp_old": old, "advantages": adv, "mask": mask}
    kwargs.update(change)
    with pytest.raises(ValueError, match=match):
        icepop_loss(**kwargs)  # type: ignore[arg-type]


def test_nan_on_a_mask_token_is_an_error() -> None:
    new, old, adv, mask = batch()
    new[0, 0] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        icepop_loss(new, old, adv, mask)


def test_per_sequence_calls_with_the_batch_normalizer_add_up() -> None:
    """What a per-sample trainer (prime-rl's custom loss, micro-batches) computes: each sequence alone,
    normalised by the whole batch's mask tokens, sums to the batch's loss and gradient."""
    new, old, adv, mask = batch(seed=5, spread=2.0)
    whole = icepop_loss(new, old, adv, mask)
    n = float(mask.sum())
    parts = [
        icepop_loss(new[i : i + 1], old[i : i + 1], adv[i : i + 1], mask[i : i + 1], normalizer=n)
        for i in range(4)
    ]
    assert sum(p.loss for p in parts) == pytest.approx(whole.loss, rel=1e-12)
    np.testing.assert_allclose(np.vstack([p.grad for p in parts]), whole.grad, rtol=1e-12)
