"""Synthetic QA tasks in the unified format: proof that training learns (tests, demo).

Three seeded tasks over a small vocabulary of short English words:

- :func:`choice_examples` (multiple choice, ``mqa``): the passage is one word;
  the answer is the option that occurs in the passage
  (``<p1> cat <q> which? (1) moon (2) cat <sep>`` → ``(2)``). The answer position must
  match the passage against each option and read the label before the match: a small
  model sits at chance for a few hundred steps before it finds that two-step circuit.
- :func:`category_examples` (multiple choice, ``mqa``): the passage is one word; the
  answer says whether it names an animal (``<p1> dog <q> an animal? (1) yes (2) no <sep>``
  → ``(1)``): one look at the passage, learnt in about a hundred steps.
- :func:`span_examples` (generation, ``gqa``): the question names a position;
  the answer copies the passage word there
  (``<p1> cat dog red <q> second <sep>`` → ``dog </s>``).

Example:
    >>> train = choice_examples(256, seed=0)
    >>> train[0].task, len(train[0].options)
    ('mqa', 2)
"""

import numpy as np

from nemot.data.qa.format import QAExample

ANIMALS = ("cat", "dog", "fish", "bird")
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


def category_examples(count, seed, dataset="synthetic_category"):
    """``count`` multiple-choice examples: does the passage word name an animal (yes/no)?
    A quarter of :data:`WORDS` are :data:`ANIMALS`; the words are drawn so that each
    answer is as frequent as the other."""
    rng = np.random.default_rng(seed)
    animals = list(ANIMALS)
    others = [w for w in WORDS if w not in ANIMALS]
    examples = []
    for i in range(count):
        label = int(rng.integers(2))
        pool = animals if label == 0 else others
        word = pool[int(rng.integers(len(pool)))]
        examples.append(QAExample(
            id=f"{dataset}-{seed}-{i}", passage=word, question="an animal?",
            options=("yes", "no"), answers=(("yes", "no")[label],), label=label, task="mqa",
            dataset=dataset))
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
