"""Decode, then score: the one path from formatted examples to a metric (docs/spec.md section 6).

``nemot evaluate`` (:mod:`nemot.evaluation.evaluate`) and the validation metric
of training both go through :func:`decode_predictions`, so a model is scored the
same way wherever it is scored:

- multiple choice in label mode: the argmax token at ``<sep>``
  (:func:`nemot.evaluation.choices.predict_labels`), decoded, e.g. ``"(2)"``;
- everything else: generation from ``prompt_ids`` until ``</s>``,
  ``max_new_tokens`` or the end of the model's window
  (:func:`nemot.models.generation.generate`: cached for models with a cache,
  by recomputation otherwise), decoded and stripped.

The prompts are the examples' ``prompt_ids`` as the formatter made them: the text
up to ``<sep>``, cut only when it and the formatter's answer room do not fit the
window, and then by training's rule (first token kept, the passage's start
removed; :func:`nemot.data.qa.format.truncate`). A prompt that fits is decoded whole.

Example:

>>> items = formatter.format_batch(examples)                         # doctest: +SKIP
>>> score_examples(model, items, "f1", label_mode=False)             # doctest: +SKIP
0.61
"""

from nemot.data.tokenizer import Tokenizer
from nemot.evaluation import choices, metrics
from nemot.models import generation as decoding


def decode_predictions(model, examples, *, label_mode, tokenizer=None, max_new_tokens=32,
                       batch_size=8, sampler=None, jit_compile=None, pos_tagger=None):
    """The answer string of every ``FormattedExample`` (from its ``prompt_ids``).

    Args:
        model: a NeMoT or the GPT-2 baseline (any model taking ``{"token_ids"}``).
        examples: ``FormattedExample`` list, one per question.
        label_mode: multiple choice in label mode (one argmax token at ``<sep>``);
            otherwise generation.
        tokenizer: decodes the ids (default the offline GPT-2 tokenizer).
        max_new_tokens: generation limit (the window's end also stops it).
        batch_size: prompts per model call.
        sampler: ``keras_hub.samplers`` sampler or name for generation; ``None`` = greedy.
        jit_compile: XLA-compile the cached decoding loop; ``None`` = yes.
        pos_tagger: tags label-mode prompts of a highlighting model (default: its config's).

    Returns:
        A list of strings, stripped of surrounding whitespace.
    """
    tokenizer = tokenizer or Tokenizer()
    prompts = [example.prompt_ids for example in examples]
    if label_mode:
        ids = choices.predict_labels(model, prompts, batch_size=batch_size, pos_tagger=pos_tagger)
        return [tokenizer.decode([i]).strip() for i in ids]
    generated = decoding.generate(model, prompts, max_new_tokens, sampler=sampler,
                                  batch_size=batch_size, jit_compile=jit_compile)
    return [tokenizer.decode(ids).strip() for ids in generated]


def score_examples(model, examples, metric, *, label_mode, tokenizer=None, max_new_tokens=32,
                   jit_compile=None, batch_size=8, sampler=None, pos_tagger=None):
    """Mean ``metric`` of :func:`decode_predictions` against each example's ``golds``.

    Args:
        metric: a ``nemot.evaluation.metrics`` name (``accuracy``, ``f1``, ``rouge_l``, ...).
        Other arguments as :func:`decode_predictions`.
    """
    predictions = decode_predictions(model, examples, label_mode=label_mode, tokenizer=tokenizer,
                                     max_new_tokens=max_new_tokens, batch_size=batch_size,
                                     sampler=sampler, jit_compile=jit_compile,
                                     pos_tagger=pos_tagger)
    return float(metrics.score(metric, predictions, [list(example.golds) for example in examples]))
