"""Benchmark metrics on label arrays: accuracy, Pearson's r against scipy and by hand,
the constant-prediction guard, the PALs report's average against its Table 2."""

import numpy as np
import pytest

from nemot.evaluation.benchmark_metrics import accuracy, minbert_score, pearson


def test_accuracy_is_the_fraction_of_equal_labels():
    assert accuracy([1, 0, 2, 2], [1, 1, 2, 0]) == 0.5
    with pytest.raises(ValueError, match="same length"):
        accuracy([1, 0], [1])
    with pytest.raises(ValueError, match="NaN labels"):
        accuracy([1.0], [np.nan])


def test_pearson_by_hand_and_its_constant_guard():
    x, y = np.array([1.0, 2.0, 4.0, 7.0]), np.array([0.5, 2.5, 2.0, 5.0])
    dx, dy = x - x.mean(), y - y.mean()
    assert pearson(x, y) == pytest.approx((dx @ dy) / np.sqrt((dx @ dx) * (dy @ dy)))
    assert pearson(np.full(4, 2.5), y) == 0.0  # scipy would give NaN
    assert pearson(x, np.ones(4)) == 0.0


def test_the_minbert_average_of_seed_002_table_2():
    # "Zero" row: SST .523, Quora .779, STS r .377 -> average .664 as printed
    assert minbert_score(0.523, 0.779, 0.377) == pytest.approx(0.6635)
    assert round(minbert_score(0.505, 0.784, 0.366), 3) == 0.657  # "Full" row
