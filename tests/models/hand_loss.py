"""NeMoT's loss (thesis eq. 3.17) computed by hand in NumPy (float64), and the small padded
batch it is checked on: tests/models/test_losses.py compares ``nemot.NeMoTLoss`` with it
on one device, and tests/models/routing_worker.py runs the loss on two
``MirroredStrategy`` replicas for the global-batch division."""

import numpy as np

from nemot.vocab import IGNORE_ID

VOCAB = 11
BATCH, LENGTH = 4, 6
TEXT_LENGTHS = (6, 4, 2, 5)  # the rest of each row is padding
# Answer positions of the task targets per example (the last example has none).
ANSWERS = ((3, 4, 5), (2, 3), (1,), ())


def batch(seed=0):
    """``(y, y_pred)``: targets with padding and unequal masks per term, and two heads'
    float32 logits."""
    rng = np.random.default_rng(seed)
    text = rng.integers(0, VOCAB, (BATCH, LENGTH))
    lm = np.full((BATCH, LENGTH), IGNORE_ID)
    task = np.full((BATCH, LENGTH), IGNORE_ID)
    for row, length in enumerate(TEXT_LENGTHS):
        lm[row, :length - 1] = text[row, 1:length]  # next token within the text
        answers = list(ANSWERS[row])
        task[row, answers] = rng.integers(0, VOCAB, len(answers))
    y = {"task_targets": task.astype("int32"), "lm_targets": lm.astype("int32")}
    y_pred = {"logits": (rng.normal(size=(BATCH, LENGTH, VOCAB)) * 3).astype("float32"),
              "vanilla_logits": (rng.normal(size=(BATCH, LENGTH, VOCAB)) * 3).astype("float32")}
    return y, y_pred


def cross_entropy_sum(targets, logits):
    """Summed -log softmax(logits)[target] over the targets that are not ``IGNORE_ID``, and
    their count."""
    logits = np.asarray(logits, "float64")
    valid = targets != IGNORE_ID
    log_probs = logits - logits.max(-1, keepdims=True)
    log_probs -= np.log(np.exp(log_probs).sum(-1, keepdims=True))
    picked = np.take_along_axis(log_probs, np.where(valid, targets, 0)[..., None], -1)[..., 0]
    return float(-(picked * valid).sum()), int(valid.sum())


def terms(y, y_pred, rows=slice(None), counts_from=slice(None)):
    """``{"task": L1, "lm": L2, "vanilla": L3}``: each term's summed cross-entropy over
    ``rows`` divided by its target count over ``counts_from`` (the global batch)."""
    sources = {"task": ("task_targets", "logits"), "lm": ("lm_targets", "logits"),
               "vanilla": ("task_targets", "vanilla_logits")}
    out = {}
    for term, (target, logits) in sources.items():
        total, _ = cross_entropy_sum(y[target][rows], y_pred[logits][rows])
        _, count = cross_entropy_sum(y[target][counts_from], y_pred[logits][counts_from])
        out[term] = total / max(count, 1)
    return out


def loss(y, y_pred, task_weight=1.0, lm_weight=0.2, vanilla_weight=0.5, **rows):
    """``w1 L1 + w2 L2 + w3 L3``."""
    values = terms(y, y_pred, **rows)
    return (task_weight * values["task"] + lm_weight * values["lm"]
            + vanilla_weight * values["vanilla"])


def logits_gradients(y, y_pred, task_weight=1.0, lm_weight=0.2, vanilla_weight=0.5):
    """d loss / d logits and d loss / d vanilla_logits: ``(softmax - onehot) / count`` at
    each term's target positions, weighted."""
    def term(targets, logits, weight):
        logits = np.asarray(logits, "float64")
        valid = targets != IGNORE_ID
        probs = np.exp(logits - logits.max(-1, keepdims=True))
        probs /= probs.sum(-1, keepdims=True)
        onehot = np.zeros_like(probs)
        np.put_along_axis(onehot, np.where(valid, targets, 0)[..., None], 1.0, -1)
        return weight * (probs - onehot) * valid[..., None] / max(valid.sum(), 1)

    return (term(y["task_targets"], y_pred["logits"], task_weight)
            + term(y["lm_targets"], y_pred["logits"], lm_weight),
            term(y["task_targets"], y_pred["vanilla_logits"], vanilla_weight))
