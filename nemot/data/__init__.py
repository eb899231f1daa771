"""NeMoT data (docs/spec.md sections 1, 3 and 4), grouped by what is read:

- :mod:`~nemot.data.qa`: NeMoT's question answering data: the unified text-to-text QA
  format, one reader per dataset family, the dataset registry, and the ``tf.data``
  datasets of one split and of the multi-format pool.
- :mod:`~nemot.data.c4`: the C4 pre-training stream (raw files, ``data_prep`` shards or
  TensorFlow Datasets) and its ``tf.data`` dataset.
- :mod:`~nemot.data.benchmarks`: the papers' benchmark data, one module per dataset
  (GLUE, SuperGLUE, minBERT, NAMES, CIFAR-10), BERT's word pieces and T5's text-to-text
  mixture of GLUE and SuperGLUE.
- :mod:`~nemot.data.synthetic`: learnable stand-ins for all of them (tests, smoke runs,
  the demo).

Beside the groups, what they share: :mod:`~nemot.data.raw` (the :class:`DataError` of
every reader and the raw-file parsers), :mod:`~nemot.data.tokenizer` (GPT-2 with NeMoT's
added tokens; no TensorFlow), :mod:`~nemot.data.pos_tags` (the highlighting strategy's
tags), :mod:`~nemot.data.batching` (rows to the batches of every training dataset),
:mod:`~nemot.data.sampling` (which task each multi-task batch draws),
:mod:`~nemot.data.shards` (the tokenized formats on disk), :mod:`~nemot.data.tf_errors`
and :mod:`~nemot.data.memory` (``tf.data``'s exceptions and allocator); and what builds
on the groups: :mod:`~nemot.data.config` (a run's ``[data]`` table),
:mod:`~nemot.data.sources` (a run's data) and :mod:`~nemot.data.prepare`
(``python -m data_prep``).

Example:
    >>> from nemot.data import Formatter, Tokenizer, load_examples
    >>> fmt = Formatter(Tokenizer())
    >>> formatted = fmt.format_batch(load_examples("race", "dev", "RACE"))  # doctest: +SKIP
"""

from nemot.data.qa.format import FormattedExample, Formatter, QAExample, expand_answers, truncate
from nemot.data.qa.registry import SEED_DATASETS, load_examples
from nemot.data.raw import DataError
from nemot.data.tokenizer import Tokenizer

__all__ = ["DataError", "FormattedExample", "Formatter", "QAExample", "SEED_DATASETS",
           "Tokenizer", "expand_answers", "load_examples", "truncate"]
