"""The cheap dropout of nemot.dropout: keep rate, scale, independence across positions,
calls (steps) and salts (sub-layers); the model's dropouts draw it. Replicas: see
tests/models/test_routing.py (MirroredStrategy worker); JAX: tests/test_jax_backend.py.

Tolerances: a keep rate over N draws has standard deviation sqrt(p (1 - p) / N); a
correlation between independent masks has about 1 / sqrt(N). Every check allows 5 of
them (a false alarm about once in 3.5 million).
"""

import keras
import numpy as np
import pytest
from keras import ops

import nemot
from nemot import dropout as drop

SHAPE = (16, 128, 256)  # 524,288 elements
N = int(np.prod(SHAPE))


def mask(rate, seed):
    return np.asarray(ops.convert_to_numpy(drop.dropout(ops.ones(SHAPE), rate, seed))) > 0


def correlation(a, b):
    return float(np.corrcoef(a.ravel().astype(np.float64), b.ravel().astype(np.float64))[0, 1])


@pytest.fixture()
def seeds():
    generator = keras.random.SeedGenerator(7)
    return [drop.draw_seed(generator, training=True) for _ in range(3)]


@pytest.mark.parametrize("rate", [0.1, 0.5, 0.9])
def test_keep_rate_and_scale(rate, seeds):
    out = np.asarray(ops.convert_to_numpy(drop.dropout(ops.ones(SHAPE), rate, seeds[0])))
    keep = drop.keep_threshold(rate) / drop.DRAW_RANGE
    assert abs(keep - (1 - rate)) <= 2 ** -17
    kept = out > 0
    assert abs(kept.mean() - keep) < 5 * np.sqrt(keep * (1 - keep) / N)
    # Kept values are scaled so that the expectation is exactly the input.
    np.testing.assert_allclose(out[kept], 1 / keep, rtol=1e-6)
    assert abs(out.mean() - 1) < 5 * np.sqrt((1 - keep) / keep / N)


def test_masks_are_independent_across_positions(seeds):
    m = mask(0.5, seeds[0])
    bound = 5 / np.sqrt(N / 2)
    # Neighbours along the last axis share one 32-bit word (its low and high halves).
    assert abs(correlation(m[..., 0::2], m[..., 1::2])) < bound
    assert abs(correlation(m[..., :-1], m[..., 1:])) < 5 / np.sqrt(N)
    assert abs(correlation(m[:, :-1], m[:, 1:])) < 5 / np.sqrt(N)
    assert abs(correlation(m[:-1], m[1:])) < 5 / np.sqrt(N)
    # Row sums vary as a binomial's: no row is over- or under-kept.
    rows = m.reshape(-1, SHAPE[-1]).mean(axis=1)
    assert abs(rows.std() - np.sqrt(0.25 / SHAPE[-1])) < 0.1 * np.sqrt(0.25 / SHAPE[-1])


def test_masks_are_independent_across_calls_and_salts(seeds):
    first, second = mask(0.5, seeds[0]), mask(0.5, seeds[1])
    assert abs(correlation(first, second)) < 5 / np.sqrt(N)
    salted = [mask(0.5, drop.salted(seeds[0], salt)) for salt in (0, 1)]
    assert abs(correlation(salted[0], salted[1])) < 5 / np.sqrt(N)
    assert abs(correlation(salted[0], first)) < 5 / np.sqrt(N)
    # ... and a seed gives the same mask every time (resumption relies on it).
    np.testing.assert_array_equal(mask(0.5, seeds[0]), first)


def test_odd_last_axis_and_inference():
    seed = drop.draw_seed(keras.random.SeedGenerator(1), training=True)
    out = drop.dropout(ops.ones((4, 7)), 0.5, seed)
    assert tuple(out.shape) == (4, 7)
    assert drop.draw_seed(keras.random.SeedGenerator(1), training=False) is None
    x = ops.ones((4, 7))
    assert drop.dropout(x, 0.5, None) is x


def test_every_model_dropout_draws_and_advances_its_set_generator():
    cfg = nemot.NeMoTConfig.preset("tiny").replace(num_vanilla_layers=1, num_nm_layers=1,
                                                   output_blocks=("lm",))
    model = nemot.build_model(cfg)
    ids = np.array([[50301, 50279, 50282] + list(range(1, 17))], "int32")
    owners = [model.backbone.vanilla_set, model.backbone.neuromodulatory_set, model.backbone.output_set, model.backbone.gate]
    before = [np.array(o.seed_generator.state.numpy()) for o in owners]
    a = model({"token_ids": ids}, training=True)["logits"]
    b = model({"token_ids": ids}, training=True)["logits"]
    after = [np.array(o.seed_generator.state.numpy()) for o in owners]
    for old, new in zip(before, after):
        assert new[1] == old[1] + 2  # one draw per call
    assert not np.allclose(ops.convert_to_numpy(a), ops.convert_to_numpy(b))
    np.testing.assert_array_equal(ops.convert_to_numpy(model({"token_ids": ids})["logits"]),
                                  ops.convert_to_numpy(model({"token_ids": ids})["logits"]))
