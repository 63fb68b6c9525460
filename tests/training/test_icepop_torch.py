"""The torch IcePop loss agrees with the NumPy one, and autograd gives the same gradient.

Skipped without torch, unless ``VF_REQUIRE_TORCH=1`` (CI), which makes its absence a failure."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from tests.tiers import component_missing
from verifiers.training import icepop_loss

try:
    import torch
except ImportError:  # pragma: no cover - depends on the machine
    component_missing("VF_REQUIRE_TORCH", "torch is not installed", module_level=True)

from verifiers.training import icepop_loss_torch


def batch(seed: int, spread: float) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    old = np.log(rng.uniform(0.01, 0.99, size=(5, 9)))
    new = old + rng.normal(0, spread, size=old.shape)
    new[0, 1] = old[0, 1] + math.log(0.5)  # boundaries exactly
    new[1, 2] = old[1, 2] + math.log(5.0)
    new[2, 3] = old[2, 3] - 1000.0  # a sequence below the floor
    new[3, 4] = old[3, 4] + 1000.0
    adv = rng.normal(0, 1, size=5)
    mask = rng.uniform(size=old.shape) < 0.75
    mask[:, :5] = True
    return new, old, adv, mask


def both(new: np.ndarray, old: np.ndarray, adv: np.ndarray, mask: np.ndarray, **kw: Any) -> tuple[Any, ...]:
    ref = icepop_loss(new, old, adv, mask, **kw)
    t_new = torch.tensor(new, dtype=torch.float64, requires_grad=True)
    res = icepop_loss_torch(t_new, torch.tensor(old), torch.tensor(adv), torch.tensor(mask), **kw)
    res.loss.backward()
    assert t_new.grad is not None
    return ref, res, t_new.grad.numpy()


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("spread", [0.0, 0.5, 3.0])
def test_numpy_and_torch_agree(seed: int, spread: float) -> None:
    new, old, adv, mask = batch(seed, spread)
    ref, res, grad = both(new, old, adv, mask)
    assert res.loss.item() == pytest.approx(ref.loss, rel=1e-12, abs=1e-15)
    np.testing.assert_allclose(grad, ref.grad, rtol=1e-12, atol=1e-15)
    assert res.metrics == pytest.approx(ref.metrics, rel=1e-12)
    assert np.all(np.isfinite(grad))


def test_agree_with_other_bounds_and_normalizer() -> None:
    new, old, adv, mask = batch(7, 1.0)
    kw = {"alpha": 0.25, "beta": 2.0, "ratio_floor": 1e-3, "normalizer": 100.0}
    ref, res, grad = both(new, old, adv, mask, **kw)
    assert res.loss.item() == pytest.approx(ref.loss, rel=1e-12)
    np.testing.assert_allclose(grad, ref.grad, rtol=1e-12, atol=1e-15)


def test_padding_nan_gives_no_nan_gradient() -> None:
    new, old, adv, mask = batch(1, 0.5)
    new[~mask] = np.nan
    _, res, grad = both(new, old, adv, mask)
    assert math.isfinite(res.loss.item())
    assert np.all(np.isfinite(grad)) and np.all(grad[~mask] == 0.0)


def test_float32_inputs() -> None:
    new, old, adv, mask = batch(2, 0.3)
    new[0, 1], new[1, 2] = old[0, 1], old[1, 2]  # exact boundaries round differently in float32
    t_new = torch.tensor(new, dtype=torch.float32, requires_grad=True)
    res = icepop_loss_torch(
        t_new, torch.tensor(old, dtype=torch.float32), torch.tensor(adv), torch.tensor(mask)
    )
    assert res.loss.dtype == torch.float32
    res.loss.backward()
    assert t_new.grad is not None
    np.testing.assert_allclose(t_new.grad.numpy(), icepop_loss(new, old, adv, mask).grad, atol=1e-6)


def test_bad_input_matches_numpy() -> None:
    new, old, adv, mask = batch(0, 0.1)
    t = {k: torch.tensor(v) for k, v in {"new": new, "old": old, "adv": adv}.items()}
    with pytest.raises(ValueError, match="0/1"):
        icepop_loss_torch(t["new"], t["old"], t["adv"], torch.full(new.shape, 2))
    with pytest.raises(ValueError, match="advantages"):
        icepop_loss_torch(t["new"], t["old"], t["adv"][:3], torch.tensor(mask))
    with pytest.raises(ValueError, match="alpha"):
        icepop_loss_torch(t["new"], t["old"], t["adv"], torch.tensor(mask), alpha=-1.0)
    nan = t["new"].clone()
    nan[0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        icepop_loss_torch(nan, t["old"], t["adv"], torch.tensor(mask))
