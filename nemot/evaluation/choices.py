"""Multiple choice (docs/spec.md section 6): label mode, as the thesis evaluated, and option
scoring by likelihood, an alternative.

- :func:`predict_labels`: the argmax over the whole vocabulary at the ``<sep>`` position
  (one forward pass; the token is compared with the gold ``(k)``).
- :func:`score_options`: each option is appended as the answer of the generate-mode
  format (``... <sep> option text </s>``) and scored by the log-probability of those
  answer tokens (``</s>`` included); the highest score wins. ``reduction="mean"``
  (default) averages over the answer tokens, so long options are not penalised for
  their length; ``"sum"`` is the plain sequence log-likelihood.

Generation, the third way to answer, is the models' (:mod:`nemot.models.generation`).

Models with the highlighting reading strategy (``reading_strategies`` has
``"highlighting"``) need POS tags with their input. :func:`predict_labels`,
:func:`next_token_logits`, :func:`answer_log_probs` and :func:`score_options` compute
them from the token ids they run (``pos_tagger=``, default
``nemot.data.pos_tags.pos_tagger_for(model.config)``, NLTK's perceptron): a prompt's
tags equal those of the same positions in training, because the text before ``<sep>``
is tagged on its own.

Example:

>>> ids = predict_labels(model, [item.prompt_ids for item in label_items])  # doctest: +SKIP
>>> [tokenizer.decode([i]) for i in ids]                  # doctest: +SKIP  # "(k)" strings
>>> scores = score_options(model, formatter, examples)    # doctest: +SKIP  # per option
"""

import dataclasses

import numpy as np
from keras import ops

from nemot.data.pos_tags import needs_pos_tags, pos_tagger_for
from nemot.data.qa.format import Formatter, truncate
from nemot.models.generation import check_prompts, logits_at, pad_prompts

# How an option's likelihood combines its tokens' log-probabilities (the evaluation
# command's --score-reduction choices, nemot.evaluation.options.REDUCTIONS).
REDUCTIONS = {"mean": np.mean, "sum": np.sum}


def resolve_pos_tagger(model, pos_tagger=None):
    """The tagger for ``model``'s inputs: ``pos_tagger`` or, when None, the default of its
    config (:func:`nemot.data.pos_tags.pos_tagger_for`); None for a model without
    highlighting."""
    config = getattr(model, "config", None)
    if not needs_pos_tags(config):
        return None
    return pos_tagger if pos_tagger is not None else pos_tagger_for(config)


def model_inputs(model, token_ids, pos_tagger=None):
    """``{"token_ids": token_ids}``, plus ``"pos_tags"`` [B, n] when ``pos_tagger`` is given
    (from :func:`resolve_pos_tagger`)."""
    inputs = {"token_ids": token_ids}
    if pos_tagger is not None:
        inputs["pos_tags"] = pos_tagger.tag_batch(token_ids, model.config.num_aux_tokens)
    return inputs


def _logits(model, token_ids, pos_tagger):
    return model(model_inputs(model, token_ids, pos_tagger), training=False)["logits"]


def next_token_logits(model, prompts, pos_tagger=None):
    """Main-head logits [B, vocab] at each prompt's last text position (one forward pass).

    ``pos_tagger``: tags the prompts of a highlighting model (see :func:`resolve_pos_tagger`).
    """
    prompts = check_prompts(model, prompts, need_room=0)
    a = model.config.num_aux_tokens
    aux, text, lengths = pad_prompts(prompts, a)
    logits = _logits(model, np.concatenate([aux, text], axis=1),
                     resolve_pos_tagger(model, pos_tagger))
    return logits_at(ops.cast(logits, "float32"), lengths - 1)


def predict_labels(model, prompts, batch_size=8, pos_tagger=None):
    """Label mode (thesis): the argmax token over the whole vocabulary at ``<sep>``, per prompt.

    ``prompts`` end with ``<sep>`` (``FormattedExample.prompt_ids`` in label mode).
    Returns a list of token ids; compare ``tokenizer.decode([id])`` with the gold ``(k)``.
    ``pos_tagger``: tags the prompts of a highlighting model (default: the config's,
    built once per call; see :func:`resolve_pos_tagger`).
    """
    prompts = list(prompts)
    pos_tagger = resolve_pos_tagger(model, pos_tagger)
    ids = []
    for first in range(0, len(prompts), batch_size):
        logits = next_token_logits(model, prompts[first:first + batch_size], pos_tagger)
        ids += np.asarray(ops.convert_to_numpy(ops.argmax(logits, axis=-1))).tolist()
    return ids


def answer_log_probs(model, sequences, answer_lengths, pos_tagger=None):
    """Log-probability of the last ``answer_lengths[i]`` text tokens of each sequence.

    Args:
        model: a NeMoT.
        sequences: lists of aux + text ids.
        answer_lengths: how many trailing text tokens are the answer.
        pos_tagger: tags the sequences of a highlighting model (see :func:`resolve_pos_tagger`).

    Returns:
        A list of float32 arrays, one log-probability per answer token.
    """
    sequences = check_prompts(model, sequences, need_room=0)
    a = model.config.num_aux_tokens
    aux, text, lengths = pad_prompts(sequences, a)
    logits = ops.cast(_logits(model, np.concatenate([aux, text], axis=1),
                              resolve_pos_tagger(model, pos_tagger)), "float32")
    # logits[:, t] predicts text token t + 1.
    targets = ops.convert_to_tensor(np.concatenate(
        [text[:, 1:], np.zeros((len(text), 1), np.int32)], axis=1)[..., None])
    picked = ops.take_along_axis(logits, targets, axis=-1)[..., 0]
    log_probs = np.asarray(ops.convert_to_numpy(picked - ops.logsumexp(logits, axis=-1)))
    out = []
    for row, (n, k) in enumerate(zip(lengths, answer_lengths)):
        if not 0 < k < n:
            raise ValueError(f"sequence {row}: answer length {k} must be in 1..{n - 1}")
        out.append(log_probs[row, n - 1 - k:n - 1])
    return out


def score_options(model, formatter, examples, reduction="mean", batch_size=8, pos_tagger=None):
    """Score every option of each multiple-choice example as an appended answer.

    Each option ``k`` is appended in the generate-mode layout
    (``<p1> ... (1) ... <sep> option_k </s>``, aux tokens of ``formatter``) and
    scored by its answer tokens' log-probabilities, averaged (``"mean"``,
    default) or summed (``"sum"``). A sequence longer than
    ``formatter.max_text_length`` is cut like training examples (first token
    plus the last ones, so the passage loses its start).

    Args:
        model: a NeMoT.
        formatter: a :class:`nemot.data.Formatter` (its mode, task token and length are used).
        examples: :class:`nemot.data.QAExample` with ``options``.
        reduction: ``"mean"`` or ``"sum"``.
        batch_size: sequences per forward pass.
        pos_tagger: tags each whole sequence (prompt and appended option) of a
            highlighting model (default: the config's; see :func:`resolve_pos_tagger`).

    Returns:
        A list (per example) of lists of option scores; the prediction is the argmax.
    """
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction must be one of {sorted(REDUCTIONS)}, got {reduction!r}")
    pos_tagger = resolve_pos_tagger(model, pos_tagger)
    answers = Formatter(formatter.tokenizer, formatter.max_text_length, formatter.mode,
                        formatter.task_token, mqa_mode="generate")
    texts, owners = [], []
    for i, example in enumerate(examples):
        if not example.options:
            raise ValueError(f"example {example.id!r}: no options to score")
        texts.append(answers.prompt_text(example))
        for k in range(len(example.options)):
            texts.append(answers.answer_text(dataclasses.replace(example, label=k)))
            owners.append(i)
    encoded = iter(formatter.tokenizer.encode_batch(texts))
    sequences, answer_lengths = [], []
    for example in examples:
        prompt_ids = next(encoded)
        for _ in example.options:
            answer_ids = next(encoded)
            (text_ids,) = truncate(prompt_ids + answer_ids, formatter.max_text_length)
            sequences.append(answers.aux_ids(example) + text_ids)
            answer_lengths.append(len(answer_ids))
    scores = [[] for _ in examples]
    for first in range(0, len(sequences), batch_size):
        chunk = slice(first, first + batch_size)
        log_probs = answer_log_probs(model, sequences[chunk], answer_lengths[chunk], pos_tagger)
        for owner, values in zip(owners[chunk], log_probs):
            scores[owner].append(float(REDUCTIONS[reduction](values)))
    return scores
