"""NeMoT data: the tokenizer, the unified text-to-text QA format, one reader per
dataset and the dataset registry (docs/spec.md sections 1, 3 and 4).

Example:
    >>> from nemot.data import Formatter, Tokenizer, load_examples
    >>> fmt = Formatter(Tokenizer())
    >>> formatted = fmt.format_batch(load_examples("race", "dev", "RACE"))  # doctest: +SKIP
"""

from nemot.data.format import (DataError, FormattedExample, Formatter, QAExample, expand_answers,
                               truncate)
from nemot.data.registry import SEED_DATASETS, load_examples
from nemot.data.tokenizer import Tokenizer

__all__ = ["DataError", "FormattedExample", "Formatter", "QAExample", "SEED_DATASETS",
           "Tokenizer", "expand_answers", "load_examples", "truncate"]
