"""Synthetic QA tasks in the unified format: proof that training learns (tests, demo).

Two seeded tasks over a small vocabulary of one-token English words:

- :func:`choice_examples` (multiple choice, ``mqa``): the passage is one word;
  the answer is the option that occurs in the passage
  (``<p1> cat <q> which? (1) moon (2) cat <sep>`` → ``(2)``).
- :func:`span_examples` (generation, ``gqa``): the question names a position;
  the answer copies the passage word there
  (``<p1> cat dog red <q> second <sep>`` → ``dog </s>``).

Example:
    >>> train = choice_examples(256, seed=0)
    >>> train[0].task, len(train[0].options)
    ('mqa', 2)
"""

import numpy as np

from nemot.data.format import QAExample

WORDS = ("cat", "dog", "red", "blue", "sun", "moon", "tree", "fish", "bird", "car", "book",
         "king", "queen", "apple", "river", "stone")
ORDINALS = ("first", "second", "third", "fourth", "fifth")


def choice_examples(count, seed, num_options=2, dataset="synthetic_choice"):
    """``count`` multiple-choice examples: pick the option that occurs in the passage."""
    rng = np.random.default_rng(seed)
    examples = []
    for i in range(count):
        words = rng.choice(len(WORDS), size=num_options, replace=False)
        label = int(rng.integers(num_options))
        options = tuple(WORDS[w] for w in words)
        examples.append(QAExample(
            id=f"{dataset}-{seed}-{i}", passage=options[label],
            question="which?", options=options,
            answers=(options[label],), label=label, task="mqa", dataset=dataset))
    return examples


def span_examples(count, seed, passage_words=3, dataset="synthetic_span"):
    """``count`` generation examples: copy the passage word at the named position."""
    if passage_words > len(ORDINALS):
        raise ValueError(f"passage_words must be at most {len(ORDINALS)}, got {passage_words}")
    rng = np.random.default_rng(seed)
    examples = []
    for i in range(count):
        words = [WORDS[w] for w in rng.choice(len(WORDS), size=passage_words, replace=False)]
        k = int(rng.integers(passage_words))
        examples.append(QAExample(
            id=f"{dataset}-{seed}-{i}", passage=" ".join(words), question=ORDINALS[k],
            answers=(words[k],), task="gqa", dataset=dataset))
    return examples
