"""Group-relative advantages (reward minus the group mean, no std division)."""

from __future__ import annotations

import numpy as np
import pytest

from verifiers.training import group_advantages


def test_reward_minus_group_mean_without_std_division() -> None:
    adv = group_advantages([1.0, 0.0, 0.0, 0.0, 0.5, 0.5, 0.5, 0.5], group_size=4)
    np.testing.assert_allclose(adv, [0.75, -0.25, -0.25, -0.25, 0, 0, 0, 0])


@pytest.mark.parametrize("group_size", [1, 2, 5, 8])
def test_advantages_sum_to_zero_per_group(group_size: int) -> None:
    rng = np.random.default_rng(group_size)
    rewards = rng.uniform(-3, 7, size=group_size * 13)
    adv = group_advantages(rewards, group_size).reshape(-1, group_size)
    np.testing.assert_allclose(adv.sum(axis=1), 0.0, atol=1e-12)


def test_length_weighted_baseline_zeroes_the_length_weighted_sum() -> None:
    rng = np.random.default_rng(0)
    rewards = rng.integers(0, 2, size=24).astype(float)
    lengths = rng.integers(1, 50, size=24)
    adv = group_advantages(rewards, 6, length_weighted=True, lengths=lengths)
    np.testing.assert_allclose((adv * lengths).reshape(-1, 6).sum(axis=1), 0.0, atol=1e-9)
    # the baseline is sum(r * l) / sum(l): a long wrong answer pulls it down more than a short one
    np.testing.assert_allclose(
        group_advantages([1.0, 0.0], 2, length_weighted=True, lengths=[1, 3]), [0.75, -0.25]
    )


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"rewards": [1.0, 0.0, 1.0], "group_size": 2}, "do not split"),
        ({"rewards": [1.0, float("nan")], "group_size": 2}, "finite"),
        ({"rewards": [1.0, 0.0], "group_size": 0}, "at least 1"),
        ({"rewards": [1.0, 0.0], "group_size": 2, "length_weighted": True}, "lengths"),
        ({"rewards": [1.0, 0.0], "group_size": 2, "lengths": [1, 2]}, "only used"),
        ({"rewards": [1.0, 0.0], "group_size": 2, "length_weighted": True, "lengths": [0, 0]}, "sum to 0"),
    ],
)
def test_bad_input_says_what_is_wrong(kwargs: dict[str, object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        group_advantages(**kwargs)  # type: ignore[arg-type]
