"""Sliding-window perplexity for the zero-shot LM evaluation (docs/spec.md section 4; thesis Table 3.1).

Which tokens are scored: the original code's protocol (its WikiText/PTB/LAMBADA
loaders and ``loss_function_window_size``). A document of L BPE ids is cut into
segments starting at 0, w, 2w, ... (w = ``stride``, S = ``window``); segment k
has S *inputs* ``ids[k*w : k*w + S]`` and S *targets* ``ids[k*w + 1 : k*w + S + 1]``
(fewer at the end of the document), so ``logits[:, t]`` is scored against input
id ``t + 1``:

* the first segment scores all its targets (ids 1 .. min(S, L - 1));
* a later segment scores only the targets in the last w of its S positions,
  ids ``(k-1)*w + S + 1 .. k*w + S``: exactly the ids past the previous segment's
  targets.

So every id but each document's first is scored exactly once, for any
1 <= w <= S, and every scored id after the first segment has at least S - w ids
of context. Segments past the one that reaches the end of the document would
score nothing (the original still ran them); they are not run. Perplexity =
exp(sum of cross-entropies / number of scored ids) over all documents. The
thesis used w = 768 and w = 32 with S = 768.

Each segment goes to the model as ``[<cls>, <dec>, <lm>] + inputs``, right-padded
with ``<pad>`` to the longest segment of its batch.

Example:

>>> import numpy as np
>>> def uniform(inputs, training=False):  # every next token equally likely
...     ids = inputs["token_ids"]
...     return {"logits": np.zeros(ids.shape[:1] + (ids.shape[1] - 3, 50313))}
>>> result = perplexity(uniform, [[1, 2, 3, 4]], window=3, stride=1)
>>> round(result.perplexity), result.num_scored_tokens
(50313, 3)
"""

import dataclasses
import math

import keras
import numpy as np

from nemot import vocab

LM_AUX_TOKENS = ("<cls>", "<dec>", "<lm>")


@dataclasses.dataclass(frozen=True)
class Segment:
    """One model input of document ``doc``: inputs ``ids[start:end]``, targets
    ``ids[start + 1:end + 1]``; target ids ``[score_from, end]`` (inclusive) are scored."""

    doc: int
    start: int
    end: int
    score_from: int

    @property
    def num_scored(self):
        return self.end + 1 - self.score_from


@dataclasses.dataclass(frozen=True)
class PerplexityResult:
    """Perplexity and what it was computed from.

    Attributes:
        perplexity: exp(total_nll / num_scored_tokens).
        total_nll: summed cross-entropy (nats) of the scored ids.
        num_scored_tokens: how many ids were scored (see the module docstring).
        num_segments: model inputs used.
        window, stride: S and w.
    """

    perplexity: float
    total_nll: float
    num_scored_tokens: int
    num_segments: int
    window: int
    stride: int

    def to_dict(self):
        return dataclasses.asdict(self)


def sliding_windows(length, window, stride, doc=0):
    """The segments of a document of ``length`` ids that score something (module docstring).

    >>> [(s.start, s.end, s.score_from) for s in sliding_windows(10, window=4, stride=3)]
    [(0, 4, 1), (3, 7, 5), (6, 9, 8)]
    """
    _check_window(window, stride)
    segments, start = [], 0
    while start < length - 1:
        end = min(start + window, length - 1)
        # Later segments score the targets in their last `stride` of `window` positions.
        score_from = start + 1 if start == 0 else start + window - stride + 1
        segments.append(Segment(doc, start, end, score_from))
        if end == length - 1:
            break  # every later segment's scored positions lie past the document's end
        start += stride
    return segments


def _check_window(window, stride):
    if not isinstance(window, int) or window < 1:
        raise ValueError(f"window must be a positive int, got {window!r}")
    if not isinstance(stride, int) or not 1 <= stride <= window:
        raise ValueError(f"stride must be an int in [1, window={window}] so no id is skipped, got {stride!r}")


def _aux_ids(aux_tokens):
    ids = []
    for token in aux_tokens:
        if token not in vocab.ADDED_TOKEN_IDS:
            raise ValueError(f"auxiliary token {token!r} is not an added NeMoT token (docs/spec.md section 1)")
        ids.append(vocab.ADDED_TOKEN_IDS[token])
    return ids


def _check_documents(documents):
    checked = []
    for index, document in enumerate(documents):
        ids = np.asarray(document)
        if ids.ndim != 1 or (ids.size and not np.issubdtype(ids.dtype, np.integer)):
            raise ValueError(f"document {index}: expected a flat list of int token ids, got array {ids.dtype} {ids.shape}")
        if ids.size and (ids.min() < 0 or ids.max() >= vocab.VOCAB_SIZE):
            raise ValueError(f"document {index}: token ids must lie in [0, {vocab.VOCAB_SIZE}), got {ids.min()}..{ids.max()}")
        checked.append(ids.astype(np.int64))
    return checked


def _segment_nll(model, documents, batch, aux_ids):
    """Summed cross-entropy of the scored targets of one batch of segments."""
    num_aux = len(aux_ids)
    width = max(s.end - s.start for s in batch)
    token_ids = np.full((len(batch), num_aux + width), vocab.PAD_ID, dtype=np.int32)
    targets = np.zeros((len(batch), width), dtype=np.int32)
    scored = np.zeros((len(batch), width), dtype=bool)
    for row, segment in enumerate(batch):
        ids = documents[segment.doc]
        n = segment.end - segment.start
        token_ids[row, :num_aux] = aux_ids
        token_ids[row, num_aux:num_aux + n] = ids[segment.start:segment.end]
        targets[row, :n] = ids[segment.start + 1:segment.end + 1]
        # Target t is document id start + 1 + t.
        scored[row, segment.score_from - segment.start - 1:n] = True
    logits = model({"token_ids": token_ids}, training=False)["logits"]
    logits = keras.ops.cast(logits, "float32")
    # Cross-entropy per position on the device; only [batch, width] floats come back.
    target_logits = keras.ops.take_along_axis(logits, keras.ops.expand_dims(targets, -1), axis=-1)[..., 0]
    nll = keras.ops.convert_to_numpy(keras.ops.logsumexp(logits, axis=-1) - target_logits)
    return float(np.sum(nll.astype(np.float64)[scored])), int(scored.sum())


def perplexity(model, documents, window=768, stride=768, batch_size=8, aux_tokens=LM_AUX_TOKENS):
    """Sliding-window perplexity of ``model`` over ``documents`` (thesis Table 3.1).

    Args:
        model: a callable ``model({"token_ids": int32 [B, 3 + n]}, training=False)``
            returning a dict whose ``"logits"`` is ``[B, n, vocab]`` with
            ``logits[:, t]`` predicting text id ``t + 1`` (a NeMoT model).
        documents: list of documents, each a list of BPE ids (no auxiliary tokens).
        window: S, the inputs (and targets) per segment (the model's ``max_text_length``).
        stride: w, how far segments advance (1 <= w <= S); each id is scored once.
        batch_size: segments per model call.
        aux_tokens: the auxiliary tokens put before every segment.

    Returns:
        A :class:`PerplexityResult`.

    Example:
        ``perplexity(nemot.build_model(cfg), docs, window=cfg.max_text_length, stride=32)``
    """
    _check_window(window, stride)
    if not isinstance(batch_size, int) or batch_size < 1:
        raise ValueError(f"batch_size must be a positive int, got {batch_size!r}")
    documents = _check_documents(documents)
    aux_ids = _aux_ids(aux_tokens)
    segments = [s for doc, ids in enumerate(documents) for s in sliding_windows(len(ids), window, stride, doc)]
    if not segments:
        raise ValueError("no document has 2 or more token ids: nothing to score")
    total_nll, count = 0.0, 0
    for first in range(0, len(segments), batch_size):
        nll, scored = _segment_nll(model, documents, segments[first:first + batch_size], aux_ids)
        total_nll += nll
        count += scored
    return PerplexityResult(
        perplexity=math.exp(total_nll / count),
        total_nll=total_nll,
        num_scored_tokens=count,
        num_segments=len(segments),
        window=window,
        stride=stride,
    )
