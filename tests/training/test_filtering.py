"""Online difficulty filtering: solve-rate pools, uniform groups dropped, solved easy prompts retired."""

from __future__ import annotations

import pytest

from verifiers.training import DifficultyPools, is_informative


def test_uniform_groups_are_dropped_and_counted() -> None:
    pools = DifficultyPools(range(4))
    assert pools.observe(0, [1.0, 0.0, 1.0]) is True
    assert pools.observe(1, [0.0, 0.0, 0.0]) is False
    assert pools.observe(2, [0.5, 0.5]) is False
    assert pools.metrics()["dropped_uniform"] == pytest.approx(2 / 3)
    assert pools.metrics()["dropped_uniform"] == 0.0  # reset by the previous call
    assert DifficultyPools(range(2), drop_uniform_groups=False).observe(0, [0.0, 0.0]) is True
    assert not is_informative([1.0]) and is_informative([0.0, 0.1])


def test_pools_follow_the_thresholds() -> None:
    pools = DifficultyPools(range(3), easy_threshold=0.75, hard_threshold=0.25, retire_solved=False)
    pools.observe(0, [1, 1, 1, 0])
    pools.observe(1, [0, 0, 0, 1])
    pools.observe(2, [1, 0, 1, 0])
    assert [pools.pool(i) for i in range(3)] == ["easy", "hard", "normal"]
    assert pools.solve_rate(0) == 0.75
    pools.observe(0, [0, 1, 0, 1])  # a prompt moves back when it gets harder
    assert pools.pool(0) == "normal"


def test_easy_prompts_with_pass_rate_one_are_retired() -> None:
    pools = DifficultyPools(range(5), easy_threshold=0.75, seed=0)
    pools.observe(0, [1, 1, 1, 1])  # easy, pass rate 1: retired
    pools.observe(1, [1, 1, 1, 0])  # easy, not all solved: still sampled
    assert pools.retired == {0}
    for _ in range(20):
        assert 0 not in pools.sample(5)
    assert sorted(pools.sample(10)) == [1, 2, 3, 4]
    assert pools.metrics()["retired"] == 1.0


def test_sample_respects_fractions_and_fills_deficits() -> None:
    pools = DifficultyPools(range(20), easy_fraction=0.25, hard_fraction=0.25, retire_solved=False, seed=1)
    for i in range(0, 4):
        pools.observe(i, [1.0, 1.0])  # easy
    for i in range(4, 6):
        pools.observe(i, [0.0, 0.0])  # hard: only 2 of them
    picked = pools.sample(8)
    assert len(picked) == len(set(picked)) == 8
    kinds = [pools.pool(i) for i in picked]
    assert kinds.count("easy") == 2 and kinds.count("hard") == 2 and kinds.count("normal") == 4
    picked = pools.sample(16)  # 4 hard wanted, 2 exist: normal makes up the rest
    kinds = [pools.pool(i) for i in picked]
    assert kinds.count("easy") == 4 and kinds.count("hard") == 2 and kinds.count("normal") == 10


def test_sampling_is_seeded() -> None:
    a, b = DifficultyPools(range(50), seed=3), DifficultyPools(range(50), seed=3)
    assert [a.sample(7) for _ in range(3)] == [b.sample(7) for _ in range(3)]


def test_bad_configuration() -> None:
    with pytest.raises(ValueError, match="above"):
        DifficultyPools(range(2), easy_threshold=0.2, hard_threshold=0.5)
    with pytest.raises(ValueError, match="fraction"):
        DifficultyPools(range(2), easy_fraction=0.7, hard_fraction=0.7)
    with pytest.raises(ValueError, match="at least one"):
        DifficultyPools([])
    with pytest.raises(KeyError):
        DifficultyPools(range(2)).observe(5, [1.0])
