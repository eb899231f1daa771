"""The thesis schedule (docs/spec.md section 5) on hand-computed points, and build_schedule."""

import math

import keras
import numpy as np
import pytest

from nemot.training.schedules import WarmupCosine, build_schedule

SQUAD = dict(start=5e-5, peak=1e-4, floor=1e-5, warmup_steps=2000, decay_steps=120000)


@pytest.mark.parametrize("step, expected", [
    (0, 5e-5),                       # warm-up starts at `start`
    (1000, 7.5e-5),                  # halfway: 5e-5 + 5e-5 / 2
    (1999, 5e-5 + 5e-5 * 1999 / 2000),
    # At W the original computes max(step - W, 1) = 1 decay step already.
    (2000, 1e-4 * 0.5 * (1 + math.cos(math.pi / 120000))),
    (2001, 1e-4 * 0.5 * (1 + math.cos(math.pi / 120000))),
    (62000, 5e-5),                   # half the decay: cos(pi/2) = 0
    (2000 + 90000, 1e-4 * 0.5 * (1 + math.cos(math.pi * 0.75))),   # 1.464e-5 > floor
    (2000 + 100000, 1e-5),           # 6.7e-6 would be below the floor
    (10 ** 7, 1e-5),                 # past D: the floor
])
def test_warmup_cosine_hand_computed(step, expected):
    assert float(WarmupCosine(**SQUAD)(step)) == pytest.approx(expected, rel=1e-5)


def test_floor_is_where_the_cosine_crosses_it():
    lr = WarmupCosine(**SQUAD)
    # 1e-4 * (1 + cos(pi p)) / 2 = 1e-5  <=>  p = acos(-0.8) / pi
    p = math.acos(-0.8) / math.pi
    crossing = 2000 + p * 120000
    assert float(lr(int(crossing) - 50)) > 1e-5
    assert float(lr(int(crossing) + 50)) == pytest.approx(1e-5, rel=1e-6)


def test_build_schedule_kinds():
    assert build_schedule({"type": "constant", "rate": 1e-5}) == 1e-5
    cosine = build_schedule({"type": "cosine", "rate": 1e-4, "decay_steps": 1000000})
    assert isinstance(cosine, keras.optimizers.schedules.CosineDecay)
    assert float(cosine(0)) == pytest.approx(1e-4)
    assert float(cosine(500000)) == pytest.approx(5e-5, rel=1e-5)
    assert float(cosine(1000000)) == pytest.approx(0.0, abs=1e-12)
    warm = build_schedule(dict(type="warmup_cosine", **SQUAD))
    assert np.isclose(float(warm(1000)), 7.5e-5)
    with pytest.raises(ValueError, match="'warmup_cosine'"):
        build_schedule({"type": "linear", "rate": 1})
    with pytest.raises(ValueError, match="decay_steps"):
        build_schedule({"type": "cosine", "rate": 1e-4})


def test_schedule_survives_serialisation():
    lr = WarmupCosine(**SQUAD)
    again = keras.saving.deserialize_keras_object(keras.saving.serialize_keras_object(lr))
    assert float(again(90000)) == pytest.approx(float(lr(90000)))
