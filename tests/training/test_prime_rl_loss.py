"""The custom loss package (vf_icepop_loss, torch only) gives verifiers.training.icepop_loss's numbers when
driven as prime-rl v0.5.0's trainer drives a custom loss: one call per sample with LossInputs, the sum of
the sample losses divided by the batch's loss-mask token count (trainer/rl/loss.py compute_loss)."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from verifiers.training.icepop import icepop_loss

if os.environ.get("VF_REQUIRE_TORCH") == "1":
    import torch
else:
    torch = pytest.importorskip("torch")

PACKAGE_DIR = Path(__file__).resolve().parents[2] / "verifiers" / "training" / "prime_rl" / "loss_package"


@pytest.fixture(scope="module")
def loss_module() -> ModuleType:
    """The package's module imported the way prime-rl's venv imports it: by its own top-level name."""
    sys.path.insert(0, str(PACKAGE_DIR))
    try:
        return importlib.import_module("vf_icepop_loss")
    finally:
        sys.path.remove(str(PACKAGE_DIR))


@dataclass
class LossInputs:  # the fields of prime-rl v0.5.0's LossInputs (trainer/rl/loss.py:13-21)
    trainer_logprobs: Any
    inference_logprobs: Any
    teacher_logprobs: Any
    advantages: Any
    loss_mask: Any


def _prime_rl_step(
    mod: ModuleType, new: np.ndarray, old: np.ndarray, adv: np.ndarray, mask: np.ndarray, **kwargs: float
) -> tuple[float, np.ndarray, list[dict[str, float]]]:
    """compute_loss as v0.5.0 runs it: per-sample fn, summed, / loss_scale; returns loss, grad, metrics."""
    t_new = torch.tensor(new, dtype=torch.float64, requires_grad=True)
    total = torch.zeros((), dtype=torch.float64)
    metrics = []
    for b in range(new.shape[0]):
        inputs = LossInputs(
            trainer_logprobs=t_new[b],
            inference_logprobs=torch.tensor(old[b], dtype=torch.float64),
            teacher_logprobs=None,
            advantages=torch.full((new.shape[1],), float(adv[b]), dtype=torch.float64),
            loss_mask=torch.tensor(mask[b], dtype=torch.bool),
        )
        out = mod.icepop_loss(inputs, **kwargs)
        total = total + out.loss
        metrics.append({k: float(v) for k, v in out.metrics.items()})
    loss_scale = max(int(mask.sum()), 1)
    scaled = total / loss_scale
    scaled.backward()
    assert t_new.grad is not None
    return float(scaled.detach()), t_new.grad.numpy(), metrics


def _case(seed: int, spread: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    b, t = 6, 12
    old = -rng.uniform(0.05, 4.0, size=(b, t))
    new = old + rng.normal(0.0, spread, size=(b, t))
    mask = rng.uniform(size=(b, t)) < 0.8
    mask[:, 0] = True
    adv = rng.normal(size=b)
    return new, old, adv, mask


@pytest.mark.parametrize(("seed", "spread"), [(0, 0.0), (1, 0.3), (2, 1.5), (3, 6.0)])
def test_same_loss_and_gradient_as_icepop_loss(loss_module: ModuleType, seed: int, spread: float) -> None:
    new, old, adv, mask = _case(seed, spread)
    ref = icepop_loss(new, old, adv, mask, alpha=0.5, beta=5.0, ratio_floor=1e-5)
    loss, grad, _ = _prime_rl_step(loss_module, new, old, adv, mask, alpha=0.5, beta=5.0, ratio_floor=1e-5)
    assert loss == pytest.approx(ref.loss, rel=1e-12, abs=1e-14)
    np.testing.assert_allclose(grad, ref.grad, rtol=1e-12, atol=1e-15)


def test_same_numbers_as_the_torch_version(loss_module: ModuleType) -> None:
    from verifiers.training.icepop_torch import icepop_loss_torch

    new, old, adv, mask = _case(7, 1.0)
    t_new = torch.tensor(new, dtype=torch.float64, requires_grad=True)
    ref = icepop_loss_torch(t_new, torch.tensor(old), torch.tensor(adv), torch.tensor(mask))
    ref.loss.backward()
    loss, grad, _ = _prime_rl_step(loss_module, new, old, adv, mask)
    assert loss == pytest.approx(float(ref.loss.detach()), rel=1e-12)
    assert t_new.grad is not None
    np.testing.assert_allclose(grad, t_new.grad.numpy(), rtol=1e-12, atol=1e-15)


def test_masked_tokens_get_exactly_zero_gradient(loss_module: ModuleType) -> None:
    old = np.zeros((1, 6))  # so that log-ratios are exactly log(alpha) and log(beta) at the boundaries
    new = old + np.log(np.array([[1.0, 0.4, 0.5, 5.0, 6.0, 1.2]]))  # ratios: in, low, alpha, beta, high, in
    mask = np.array([[True, True, True, True, True, False]])
    adv = np.array([1.0])
    _, grad, (metrics,) = _prime_rl_step(loss_module, new, old, adv, mask)
    assert grad[0, 1] == 0.0 and grad[0, 4] == 0.0  # outside [alpha, beta]
    assert grad[0, 5] == 0.0  # off the loss mask
    assert grad[0, 0] != 0.0 and grad[0, 2] != 0.0 and grad[0, 3] != 0.0  # alpha and beta are kept
    assert metrics["masked_low"] == pytest.approx(1 / 5) and metrics["masked_high"] == pytest.approx(1 / 5)
    ref = icepop_loss(new, old, adv, mask)
    np.testing.assert_allclose(grad, ref.grad, rtol=1e-12)


def test_a_sequence_below_the_floor_is_dropped_whole_and_extremes_stay_finite(
    loss_module: ModuleType,
) -> None:
    old = np.array([[-1.0, -1.0, -1.0], [-1.0, -1.0, -1.0]])
    new = np.array([[-1.0, -1.0 - 20.0, -1.0], [-1.0 + 900.0, -1.0, -np.inf]])
    mask = np.array([[True, True, True], [True, True, False]])
    adv = np.array([2.0, -1.0])
    loss, grad, metrics = _prime_rl_step(loss_module, new, old, adv, mask)
    assert metrics[0]["sequence_dropped"] == 1.0 and metrics[1]["sequence_dropped"] == 0.0
    assert np.all(grad[0] == 0.0)
    assert np.isfinite(loss) and np.all(np.isfinite(grad))
    ref = icepop_loss(new, old, adv, mask)
    assert loss == pytest.approx(ref.loss, abs=1e-15)
    assert all(np.isfinite(v) for m in metrics for v in m.values())


def test_returns_prime_rl_shaped_outputs(loss_module: ModuleType) -> None:
    inputs = LossInputs(
        trainer_logprobs=torch.zeros(3, requires_grad=True),
        inference_logprobs=torch.zeros(3),
        teacher_logprobs=None,
        advantages=torch.ones(3),
        loss_mask=torch.ones(3, dtype=torch.bool),
    )
    out = loss_module.icepop_loss(inputs, alpha=0.5, beta=5.0, ratio_floor=1e-5)
    assert (
        out.loss.dim() == 0 and float(out.loss.detach()) == -3.0
    )  # unnormalised: prime-rl divides by loss_scale
    assert all(isinstance(v, torch.Tensor) and v.dim() == 0 for v in out.metrics.values())
    with pytest.raises(ValueError, match="beta"):
        loss_module.icepop_loss(inputs, alpha=0.5, beta=0.1)


def test_the_rendered_kwargs_are_the_loss_functions_parameters(loss_module: ModuleType) -> None:
    import inspect

    from verifiers.training.prime_rl.spec import LOSS_IMPORT_PATH, LOSS_KWARGS

    assert LOSS_IMPORT_PATH == "vf_icepop_loss.icepop_loss"
    params = inspect.signature(loss_module.icepop_loss).parameters
    assert list(params)[1:] == list(LOSS_KWARGS)
    assert {k: params[k].default for k in LOSS_KWARGS} == LOSS_KWARGS
