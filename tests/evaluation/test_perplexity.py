"""Sliding-window perplexity (docs/spec.md section 4): which tokens are scored, and with what."""

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
    return [j for s in sliding_windows(length, window, stride) for j in range(s.score_from, s.end + 1)]


@pytest.mark.parametrize("length", [1, 2, 5, 9, 10, 11, 23])
@pytest.mark.parametrize("window,stride", [(4, 1), (4, 3), (5, 2), (8, 8), (4, 4), (1, 1)])
def test_windows_score_every_id_but_the_first_once(length, window, stride):
    # The original's protocol: S inputs with S targets, so even w = S loses no id.
    assert scored_positions(length, window, stride) == list(range(1, length))
    segments = sliding_windows(length, window, stride)
    assert all(s.end - s.start <= window and s.start % stride == 0 for s in segments)
    assert all(s.num_scored <= stride for s in segments[1:])


def test_later_segments_score_only_their_last_stride_targets():
    # Inputs ids[start:end], targets ids[start + 1:end + 1]; targets score_from..end scored.
    segments = sliding_windows(20, window=8, stride=4)
    assert [(s.start, s.end, s.score_from) for s in segments] == [
        (0, 8, 1), (4, 12, 9), (8, 16, 13), (12, 19, 17),
    ]


def original_protocol_nll(model, documents, window, stride):
    """Summed CE and count, written as the original code computed them: every segment
    padded to S inputs and S targets; the first segment of a document scores every
    non-pad target, later ones only those in the last w of the S positions; segments
    start at 0, w, 2w, ... while start < L - 1 (so trailing segments may score nothing)."""
    total, count = 0.0, 0
    for ids in documents:
        start, first = 0, True
        while start < len(ids) - 1:
            end = min(start + window, len(ids) - 1)
            inputs = list(ids[start:end]) + [vocab.PAD_ID] * (window - (end - start))
            targets = list(ids[start + 1:end + 1]) + [vocab.PAD_ID] * (window - (end - start))
            logits = model({"token_ids": np.array([LM_PREFIX + inputs], np.int32)}, training=False)["logits"]
            logits = np.asarray(logits, dtype=np.float64)[0]
            for t, target in enumerate(targets):
                if target == vocab.PAD_ID or (not first and t < window - stride):
                    continue
                row = logits[t]
                total += float(np.log(np.exp(row - row.max()).sum()) + row.max() - row[target])
                count += 1
            start, first = start + stride, False
    return total, count


def test_against_hand_computation_with_position_dependent_stand_in():
    # S = 4, w = 2, one document of 7 ids. Segment [0,4) scores ids 1..4 at t = 0..3;
    # [2,6) scores its last two targets, ids 5 and 6, at t = 2, 3; [4,6) would score
    # nothing. A second document of 3 ids: [0,2) scores ids 1, 2 at t = 0, 1.
    documents = [[HOT_ID] * 7, [HOT_ID] * 3]
    expected_t = [0, 1, 2, 3, 2, 3, 0, 1]
    expected_nll = sum(nll_at(t) for t in expected_t)
    for batch_size in (1, 2, 5):  # rows of different lengths are padded with <pad> (NaN logits)
        result = perplexity(position_model, documents, window=4, stride=2, batch_size=batch_size)
        assert result.num_scored_tokens == len(expected_t)
        assert result.num_segments == 3
        assert result.total_nll == pytest.approx(expected_nll, rel=1e-6)
        assert result.perplexity == pytest.approx(math.exp(expected_nll / len(expected_t)), rel=1e-6)


def test_window_equal_stride_scores_the_first_target_of_every_segment():
    # S = w = 3 on 7 ids: inputs [0,3) -> targets ids 1..3 at t = 0,1,2; inputs [3,6)
    # -> targets ids 4..6 at t = 0,1,2. Every id but the first, none lost at a boundary.
    result = perplexity(position_model, [[HOT_ID] * 7], window=3, stride=3)
    assert result.num_scored_tokens == 6 and result.num_segments == 2
    assert result.total_nll == pytest.approx(2 * (nll_at(0) + nll_at(1) + nll_at(2)), rel=1e-6)


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


@pytest.mark.parametrize("stride,batch_size", [(32, 3), (8, 4), (5, 2)])
def test_real_tiny_model_equals_the_original_protocol(tiny_model, documents, stride, batch_size):
    window = tiny_model.config.max_text_length
    total, count = original_protocol_nll(tiny_model, documents, window, stride)
    result = perplexity(tiny_model, documents, window=window, stride=stride, batch_size=batch_size)
    # Every id but each document's first, whatever the stride.
    assert result.num_scored_tokens == count == (70 - 1) + (33 - 1) + (5 - 1)
    assert result.total_nll == pytest.approx(total, rel=1e-4)
    assert result.perplexity == pytest.approx(math.exp(total / count), rel=1e-4)


def test_real_tiny_model_segments_stop_at_the_end_of_each_document(tiny_model, documents):
    result = perplexity(tiny_model, documents, window=32, stride=8, batch_size=4)
    # Segments start every 8 ids until one reaches the document's last target:
    # 70 ids -> starts 0..40 (6), 33 -> 0 (its 32 targets fit one segment), 5 -> 0.
    assert result.num_segments == 6 + 1 + 1
    assert math.isfinite(result.perplexity) and result.perplexity > 1.0
