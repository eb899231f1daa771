"""GLUE and SuperGLUE metrics against hand counts, and the benchmark averages."""

import numpy as np
import pytest

from nemot.data.benchmarks.superglue import PairRow
from nemot.evaluation import benchmarks


def test_glue_metrics_against_hand_counts():
    # MCC: tp=2 tn=1 fp=1 fn=0 -> (2*1 - 1*0) / sqrt(3*2*2*1)
    assert benchmarks.matthews([1, 1, 1, 0], [1, 1, 0, 0]) == pytest.approx(2 / np.sqrt(12))
    assert benchmarks.matthews([1, 1, 1], [1, 0, 1]) == 0.0  # constant predictions
    mrpc = benchmarks.score_glue("MRPC", [1, 0, 1, 1], [1, 1, 0, 1])
    assert mrpc == {"f1": pytest.approx(2 * 2 / (3 + 3)), "acc": 0.5}
    stsb = benchmarks.score_glue("STS-B", [1.0, 2.0, 4.0], [1.0, 3.0, 2.0])
    assert stsb["pearson"] == pytest.approx(np.corrcoef([1, 2, 4], [1, 3, 2])[0, 1])
    assert stsb["spearman"] == pytest.approx(0.5)  # ranks (1,2,3) vs (1,3,2)
    scores = {"CoLA": {"mcc": 0.5}, "MRPC": {"f1": 0.9, "acc": 0.8}, "MNLI": {"acc": 0.8},
              "MNLI-mm": {"acc": 0.7}}
    assert benchmarks.glue_average(scores) == pytest.approx((50 + 85 + 75) / 3)


def test_macro_f1_averages_the_three_class_f1s():
    golds = [0, 0, 1, 2, 2, 2]
    predictions = [0, 1, 1, 2, 2, 0]
    # class 0: tp 1, fp 1, fn 1 -> 0.5; class 1: tp 1, fp 1, fn 0 -> 2/3;
    # class 2: tp 2, fn 1 -> 0.8
    assert benchmarks.macro_f1(predictions, golds, 3) == pytest.approx((0.5 + 2 / 3 + 0.8) / 3)
    # absent classes score 0
    assert benchmarks.macro_f1([0, 0], [0, 0], 3) == pytest.approx(1 / 3)


def test_multirc_f1a_pools_options_and_handles_empty_denominators():
    assert benchmarks.multirc_f1a([1, 1, 0, 0], [1, 0, 1, 0]) == pytest.approx(0.5)
    # precision 1 (empty denominator), recall 0
    assert benchmarks.multirc_f1a([0, 0], [1, 0]) == pytest.approx(2 * 1 * 0 / 1)
    assert benchmarks.multirc_f1a([0, 0], [0, 0]) == 1.0


def _rows(labels, groups=None, options=None, answers=()):
    groups = groups or [str(i) for i in range(len(labels))]
    options = options or [""] * len(labels)
    return [PairRow(("a",), ("b",), lab, g, o, answers)
            for lab, g, o in zip(labels, groups, options)]


def test_score_binary_and_cb():
    rows = _rows([1, 0, 1, 0])
    probabilities = np.array([[0.9], [0.2], [0.4], [0.6]])
    assert benchmarks.score_superglue("RTE", rows, probabilities) == {"acc": 0.5}
    cb = _rows([2, 0, 1])
    probs = np.array([[0.1, 0.2, 0.7], [0.5, 0.3, 0.2], [0.6, 0.3, 0.1]])
    out = benchmarks.score_superglue("CB", cb, probs)
    assert out["acc"] == pytest.approx(2 / 3)
    assert out["f1"] == pytest.approx(benchmarks.macro_f1([2, 0, 0], [2, 0, 1], 3))
    with pytest.raises(ValueError, match="4 rows but 3 predictions"):
        benchmarks.score_superglue("RTE", rows, np.zeros((3, 1)))
    with pytest.raises(ValueError, match="task 'MNLI': expected one of BoolQ, CB"):
        benchmarks.score_superglue("MNLI", rows, np.zeros((4, 1)))


def test_score_copa_picks_the_higher_option_of_each_pair():
    rows = _rows([1, 0, 0, 1], groups=["0", "0", "1", "1"])
    # Both options below 0.5: the higher one still wins (no threshold, no running max at 0).
    score = benchmarks.score_superglue
    assert score("COPA", rows, np.array([0.3, 0.1, 0.2, 0.4])) == {"acc": 1.0}
    assert score("COPA", rows, np.array([0.3, 0.4, 0.2, 0.4])) == {"acc": 0.5}


def test_score_multirc_f1a_and_exact_match_per_question():
    rows = _rows([1, 0, 1, 1, 0], groups=["q0"] * 3 + ["q1"] * 2)
    out = benchmarks.score_superglue("MultiRC", rows, np.array([0.9, 0.1, 0.8, 0.2, 0.1]))
    assert out["em"] == 0.5  # q0 all right, q1 misses one option
    assert out["f1a"] == pytest.approx(benchmarks.multirc_f1a([1, 0, 1, 0, 0], [1, 0, 1, 1, 0]))


def test_score_record_uses_the_top_candidate_string():
    rows = _rows([1, 0, 0], groups=["7"] * 3, options=["Paris", "France", "the U.S."],
                 answers=("Paris",))
    rows += _rows([0, 1], groups=["8"] * 2, options=["Paris", "U.S."], answers=("U.S.",))
    out = benchmarks.score_superglue("ReCoRD", rows, np.array([0.2, 0.1, 0.9, 0.3, 0.2]))
    # Group 7 picks "the U.S." (F1 0, EM 0 vs "Paris"); group 8 picks "Paris" (0).
    assert out == {"f1": 0.0, "em": 0.0}
    out = benchmarks.score_superglue("ReCoRD", rows, np.array([0.9, 0.1, 0.2, 0.3, 0.8]))
    assert out == {"f1": 1.0, "em": 1.0}
    rows[4] = PairRow(("a",), ("b",), 1, "8", "the U.S. army", ("U.S.",))
    out = benchmarks.score_superglue("ReCoRD", rows, np.array([0.9, 0.1, 0.2, 0.3, 0.8]))
    assert out["em"] == 0.5
    assert out["f1"] == pytest.approx((1 + 2 * (1 / 2) * 1 / (1 / 2 + 1)) / 2)


def test_correlations_of_constant_predictions_or_golds_count_as_zero():
    """scipy gives NaN (and a warning) for a constant input; the benchmark scores 0."""
    assert benchmarks.pearson([2.0, 2.0, 2.0], [1.0, 3.0, 2.0]) == 0.0
    assert benchmarks.spearman([1.0, 3.0, 2.0], [4.0, 4.0, 4.0]) == 0.0
    assert benchmarks.score_glue("STS-B", [3, 3, 3], [1.0, 3.0, 2.0]) == {"pearson": 0.0,
                                                                        "spearman": 0.0}
    assert benchmarks.pearson([1, 2, 3], [2, 4, 7]) == pytest.approx(
        np.corrcoef([1, 2, 3], [2, 4, 7])[0, 1])


def test_a_task_scores_the_mean_of_its_metrics_and_superglue_averages_the_tasks():
    assert benchmarks.task_score({"f1": 0.9, "acc": 0.8}) == pytest.approx(85.0)
    scores = {"CB": {"f1": 0.9, "acc": 0.8}, "RTE": {"acc": 0.7}}
    assert benchmarks.superglue_average(scores) == pytest.approx((85 + 70) / 2)
    with pytest.raises(ValueError, match="no SuperGLUE task scores"):
        benchmarks.superglue_average({})
    # WNLI is outside the GLUE average (T5); MNLI alone counts when its mm file is absent.
    assert benchmarks.glue_average({"WNLI": {"acc": 0.1}, "MNLI": {"acc": 0.8}}) == \
        pytest.approx(80.0)
