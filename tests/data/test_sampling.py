"""TaskSampler: the annealing schedule, the draw frequencies, caps and exact resumption."""

import itertools

import numpy as np
import pytest

from nemot.data.sampling import BLOCK, TaskSampler, sampled_batches

SIZES = {"sst": 8544, "quora": 141498, "sts": 6040}


def test_annealed_alpha_runs_from_one_to_point_two():
    sampler = TaskSampler(SIZES, epochs=10)
    assert sampler.alpha(1) == 1.0 and sampler.alpha(10) == pytest.approx(0.2)
    assert sampler.alpha(6) == pytest.approx(1 - 0.8 * 5 / 9)
    assert TaskSampler(SIZES, epochs=1).alpha(1) == 1.0
    # The notes' numbers for the seed paper's data with E = 10.
    first, last = TaskSampler(SIZES, epochs=10).probabilities(1), \
        TaskSampler(SIZES, epochs=10).probabilities(10)
    assert [round(first[t], 3) for t in SIZES] == [0.055, 0.907, 0.039]
    assert [round(last[t], 3) for t in SIZES] == [0.271, 0.476, 0.253]


@pytest.mark.parametrize("mode,alpha", [("proportional", 1.0), ("sqrt", 0.5),
                                        ("uniform", 0.0), ("annealed", None)])
def test_100k_draws_follow_the_formula_within_one_percent(mode, alpha):
    sampler = TaskSampler(SIZES, mode=mode, epochs=3, steps_per_epoch=100_000, seed=3)
    counts = sampler.counts_before(100_000)  # all in epoch 1
    sizes = np.array(list(SIZES.values()), float)
    expected = sizes ** (1.0 if alpha is None else alpha)
    expected = expected / expected.sum()
    observed = np.array([counts[t] for t in SIZES]) / 100_000
    np.testing.assert_allclose(observed, expected, atol=0.01)


def test_later_epochs_use_their_own_alpha():
    sampler = TaskSampler(SIZES, epochs=2, steps_per_epoch=50_000, seed=1)
    tasks = sampler.schedule(50_000, 100_000)
    share = tasks.count("quora") / len(tasks)
    assert share == pytest.approx(sampler.probabilities(2)["quora"], abs=0.01)


def test_round_robin_and_cap():
    assert TaskSampler(SIZES, mode="round_robin").schedule(0, 5) == \
        ["sst", "quora", "sts", "sst", "quora"]
    capped = TaskSampler(SIZES, mode="proportional", cap=10_000)
    p = capped.probabilities(1)
    assert p["quora"] == pytest.approx(10_000 / (8544 + 10_000 + 6040))


def test_draws_are_a_function_of_seed_and_step():
    a = TaskSampler(SIZES, seed=5, epochs=4, steps_per_epoch=3000)
    b = TaskSampler(SIZES, seed=5, epochs=4, steps_per_epoch=3000)
    assert a.schedule(0, 2 * BLOCK + 7) == b.schedule(0, 2 * BLOCK + 7)
    assert [a.task_at(s) for s in range(BLOCK - 3, BLOCK + 3)] == a.schedule(BLOCK - 3, BLOCK + 3)
    assert a.schedule(0, 500) != TaskSampler(SIZES, seed=6).schedule(0, 500)


def test_sampled_batches_resume_exactly():
    sampler = TaskSampler({"a": 100, "b": 50, "c": 10}, mode="sqrt", seed=2)

    def make_iterator(task, start):
        return ((task, i) for i in itertools.count(start))

    whole = list(itertools.islice(sampled_batches(make_iterator, sampler), 5000))
    resumed = list(itertools.islice(sampled_batches(make_iterator, sampler, 4321), 679))
    assert resumed == whole[4321:]
    assert [t for t, _ in whole] == sampler.schedule(0, 5000)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="mode 'temperature'"):
        TaskSampler(SIZES, mode="temperature")
    with pytest.raises(ValueError, match="positive integers, got {'sts': 0}"):
        TaskSampler({"sst": 3, "sts": 0})
    with pytest.raises(ValueError, match="no tasks"):
        TaskSampler({})
