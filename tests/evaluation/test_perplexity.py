"""Sliding-window perplexity (SPEC.md section 4): which tokens are scored, and with what."""

import math

import numpy as np
import pytest

import nemot
from nemot import vocab
from nemot.evaluation.perplexity import perplexity, sliding_windows

LM_PREFIX = [vocab.CLS_ID, vocab.DEC_ID, vocab.ADDED_TOKEN_IDS["<lm>"]]
HOT_ID = 7  # the only token the stand-in model ever favours


def position_model(inputs, training=False):
    """Stand-in for NeMoT: at text position t, token HOT_ID has logit t, every other 0.

    Logits at padded positions are NaN, so scoring one of them poisons the result.
    """
    ids = np.asarray(inputs["token_ids"])
    assert ids.dtype == np.int32 and training is False
    assert (ids[:, :3] == LM_PREFIX).all()
    batch, n = ids.shape[0], ids.shape[1] - 3
    logits = np.zeros((batch, n, vocab.VOCAB_SIZE), dtype=np.float32)
    logits[:, :, HOT_ID] = np.arange(n, dtype=np.float32)
    logits[ids[:, 3:] == vocab.PAD_ID] = np.nan
    return {"logits": logits}


def nll_at(t):
    """Cross-entropy of HOT_ID predicted at text position t by position_model."""
    return -(t - math.log(math.exp(t) + vocab.VOCAB_SIZE - 1))


def scored_positions(length, window, stride):
    return [j for s in sliding_windows(length, window, stride) for j in range(s.score_from, s.end)]


@pytest.mark.parametrize("length", [1, 2, 5, 9, 10, 11, 23])
@pytest.mark.parametrize("window,stride", [(4, 1), (4, 3), (5, 2), (8, 8), (4, 4)])
def test_windows_score_every_id_once(length, window, stride):
    positions = scored_positions(length, window, stride)
    assert len(positions) == len(set(positions))
    segments = sliding_windows(length, window, stride)
    assert all(s.end - s.start <= window and s.start % stride == 0 for s in segments)
    if stride < window:
        assert positions == list(range(1, length))
    else:
        # non-overlapping segments: each segment's first id has no context
        assert positions == [j for j in range(1, length) if j % window]


def test_later_segments_score_only_their_last_stride_ids():
    segments = sliding_windows(20, window=8, stride=4)
    assert [(s.start, s.end, s.score_from) for s in segments] == [
        (0, 8, 1), (4, 12, 8), (8, 16, 12), (12, 20, 16),
    ]


def test_against_hand_computation_with_position_dependent_stand_in():
    # S = 4, w = 2, one document of 7 ids. Segments [0,4) scores ids 1,2,3 at
    # t = 0,1,2; [2,6) scores ids 4,5 at t = 1,2; [4,7) scores id 6 at t = 1.
    # A second document of 3 ids: [0,3) scores ids 1,2 at t = 0,1.
    documents = [[HOT_ID] * 7, [HOT_ID] * 3]
    expected_t = [0, 1, 2, 1, 2, 1, 0, 1]
    expected_nll = sum(nll_at(t) for t in expected_t)
    for batch_size in (1, 2, 5):  # rows of different lengths are padded with <pad>
        result = perplexity(position_model, documents, window=4, stride=2, batch_size=batch_size)
        assert result.num_scored_tokens == len(expected_t)
        assert result.num_segments == 4
        assert result.total_nll == pytest.approx(expected_nll, rel=1e-6)
        assert result.perplexity == pytest.approx(math.exp(expected_nll / len(expected_t)), rel=1e-6)


def test_window_equal_stride_scores_each_segment_from_its_second_id():
    # S = w = 3 on 7 ids: [0,3) t = 0,1; [3,6) t = 0,1; [6,7) has nothing to score.
    result = perplexity(position_model, [[HOT_ID] * 7], window=3, stride=3)
    assert result.num_scored_tokens == 4 and result.num_segments == 2
    assert result.total_nll == pytest.approx(2 * (nll_at(0) + nll_at(1)), rel=1e-6)


def test_other_target_tokens_use_their_own_logit():
    # target 8 never gets the favoured logit: each costs log(e^t + V - 1) nats
    result = perplexity(position_model, [[HOT_ID, 8, 8]], window=3, stride=3)
    expected = sum(math.log(math.exp(t) + vocab.VOCAB_SIZE - 1) for t in (0, 1))
    assert result.total_nll == pytest.approx(expected, rel=1e-6)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError, match="stride must be"):
        perplexity(position_model, [[1, 2]], window=4, stride=5)
    with pytest.raises(ValueError, match="document 1: token ids must lie"):
        perplexity(position_model, [[1, 2], [1, vocab.VOCAB_SIZE]], window=4, stride=4)
    with pytest.raises(ValueError, match="nothing to score"):
        perplexity(position_model, [[1], []], window=4, stride=4)
    with pytest.raises(ValueError, match="auxiliary token '<nope>'"):
        perplexity(position_model, [[1, 2]], window=4, stride=4, aux_tokens=("<cls>", "<dec>", "<nope>"))


@pytest.fixture(scope="module")
def tiny_model():
    return nemot.build_model(nemot.NeMoTConfig.preset("tiny"))


@pytest.fixture(scope="module")
def documents():
    rng = np.random.default_rng(0)
    return [rng.integers(0, vocab.GPT2_VOCAB_SIZE, size=n).tolist() for n in (70, 33, 5, 1)]


def direct_non_overlapping(model, documents, window):
    """exp(mean CE) from one unpadded model call per non-overlapping segment."""
    total, count = 0.0, 0
    for ids in documents:
        for start in range(0, len(ids), window):
            chunk = ids[start:start + window]
            if len(chunk) < 2:
                continue
            logits = model({"token_ids": np.array([LM_PREFIX + chunk], np.int32)}, training=False)["logits"]
            logits = np.asarray(logits, dtype=np.float64)[0, :-1]
            log_z = np.log(np.exp(logits - logits.max(-1, keepdims=True)).sum(-1)) + logits.max(-1)
            total += float(np.sum(log_z - logits[np.arange(len(chunk) - 1), chunk[1:]]))
            count += len(chunk) - 1
    return math.exp(total / count), count


def test_real_tiny_model_full_window_equals_direct_computation(tiny_model, documents):
    window = nemot.NeMoTConfig.preset("tiny").max_text_length
    expected, count = direct_non_overlapping(tiny_model, documents, window)
    result = perplexity(tiny_model, documents, window=window, stride=window, batch_size=3)
    # 70 ids -> 3 segments, 33 -> 2 (the second a lone id), 5 -> 1, 1 -> none
    assert result.num_scored_tokens == count == (70 - 3) + (33 - 2) + (5 - 1)
    assert result.perplexity == pytest.approx(expected, rel=1e-4)


def test_real_tiny_model_short_stride_scores_each_token_once(tiny_model, documents):
    window = nemot.NeMoTConfig.preset("tiny").max_text_length
    result = perplexity(tiny_model, documents, window=window, stride=8, batch_size=4)
    assert result.num_scored_tokens == (70 - 1) + (33 - 1) + (5 - 1)
    # segments start every 8 ids until one reaches the end: 70 -> 0..40, 33 -> 0, 8
    assert result.num_segments == 6 + 2 + 1
    assert math.isfinite(result.perplexity) and result.perplexity > 1.0
