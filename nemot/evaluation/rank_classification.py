"""Scoring a T5 on the dev sets of a text-to-text mixture (:mod:`nemot.data.benchmarks.mixture`) by
rank classification: each candidate target (:mod:`nemot.data.benchmarks.text_to_text`) is scored by
its log-likelihood and the best taken, which is the answer of greedy decoding whenever
that decodes a valid label, and never an invalid one (T5 counted those as wrong). The
candidates' probabilities become the GLUE and SuperGLUE metrics and averages of
:mod:`nemot.evaluation.benchmarks`.

Example:
    >>> scores = evaluate(mixture, model, batch_size=256)
    >>> scores["avg"], scores["glue"], scores["superglue/CB"]
"""

import numpy as np

from nemot.data.benchmarks import text_to_text
from nemot.data.benchmarks.mixture import model_batch, token_ids
from nemot.data.benchmarks.text_to_text import GLUE_TASKS
from nemot.evaluation import benchmarks


def _rows(mixture, key, examples):
    """Flattened (example, candidate) rows: inputs, candidate ids, example id."""
    inputs = token_ids(mixture.tokenizer, [e.inputs for e in examples], mixture.max_input_length)
    candidates = sorted({c for e in examples for c in e.candidates})
    ids = dict(zip(candidates, token_ids(mixture.tokenizer, candidates,
                                         mixture.max_target_length)))
    for e in examples:
        if len({tuple(ids[c]) for c in e.candidates}) < len(e.candidates):
            raise ValueError(f"{key}: candidate targets {list(e.candidates)} are not all "
                             f"different once cut to max_target_length="
                             f"{mixture.max_target_length} tokens; raise it")
    return [(inputs[i], ids[c], i) for i, e in enumerate(examples) for c in e.candidates]


def candidate_probabilities(mixture, scorer, key, examples, batch_size):
    """Per example, the softmax over its candidates of the candidates' log-likelihoods."""
    rows = _rows(mixture, key, examples)
    scores = []
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        x, y = model_batch([r[0] for r in chunk], [r[1] for r in chunk],
                           [mixture.index[key]] * len(chunk), mixture.max_input_length,
                           mixture.max_target_length)
        scores.append(np.asarray(scorer(x, y), np.float64))
    scores = np.concatenate(scores)
    out, k = [], 0
    for e in examples:
        s = scores[k:k + len(e.candidates)]
        k += len(e.candidates)
        p = np.exp(s - s.max())
        out.append(p / p.sum())
    return out


def evaluate(mixture, model, batch_size=64):
    """Every dev set's metrics of ``model`` on ``mixture``, the GLUE and SuperGLUE averages
    and their mean (×100).

    Returns ``{"avg", "glue", "superglue"}`` (when the mixture has tasks of both
    benchmarks; otherwise the one it has) plus ``"<benchmark>/<set>"`` task scores.
    """
    return score(mixture, log_likelihood_fn(model), batch_size)


def score(mixture, scorer, batch_size=64):
    """:func:`evaluate` with ``scorer(x, y) -> [B]`` log-likelihoods of the rows' targets."""
    glue_scores, superglue_scores = {}, {}
    for task in mixture.tasks:
        for dev in task.dev:
            probabilities = candidate_probabilities(mixture, scorer, task.key, dev.examples,
                                                    batch_size)
            if task.key in GLUE_TASKS:
                glue_scores[dev.name] = _glue_metrics(dev, probabilities)
            else:
                p = text_to_text.row_probabilities(dev.name, dev.examples, probabilities,
                                                   len(dev.data.rows))
                superglue_scores[dev.name] = benchmarks.score_superglue(dev.name,
                                                                        dev.data.rows, p)
    out = {}
    if glue_scores:
        out["glue"] = benchmarks.glue_average(glue_scores)
    if superglue_scores:
        out["superglue"] = benchmarks.superglue_average(superglue_scores)
    out["avg"] = float(np.mean(list(out.values())))
    for prefix, scores in (("glue", glue_scores), ("superglue", superglue_scores)):
        for name, values in scores.items():
            out[f"{prefix}/{name}"] = 100 * float(np.mean(list(values.values())))
    return out


def _glue_metrics(dev, probabilities):
    predicted = [int(np.argmax(p)) for p in probabilities]
    if dev.name == "STS-B":
        predicted = [float(e.candidates[k]) for e, k in zip(dev.examples, predicted)]
    return benchmarks.score_glue(dev.name, predicted, [e.label for e in dev.examples])


def log_likelihood_fn(model):
    """``fn(x, y) -> [B]``: the summed log-probability of each row's target under ``model``
    (a compiled Keras predict step: no per-batch Python tracing)."""
    import keras
    from keras import ops

    class LogLikelihood(keras.Model):
        def __init__(self, scored):
            super().__init__()
            self.scored = scored

        def call(self, inputs):
            labels = inputs["labels"]
            log_probs = ops.log_softmax(ops.cast(self.scored(inputs["x"], training=False),
                                                 "float32"), axis=-1)
            picked = ops.take_along_axis(log_probs, ops.maximum(labels, 0)[..., None],
                                         axis=-1)[..., 0]
            return ops.sum(ops.where(labels >= 0, picked, 0.0), axis=-1)

    scorer = LogLikelihood(model)
    scorer.run_eagerly = model.run_eagerly  # as the model was compiled (tiny runs: no tracing)
    return lambda x, y: scorer.predict_on_batch({"x": x, "labels": y})
