"""Proof that learning works through the public path (``compile`` with ``NeMoTLoss``,
``fit`` on an ``examples_dataset``, then greedy decoding of held-out examples): the
helper :func:`fit` and the synthetic tasks' checks here; the span-generation proof is
test_learning_span.py. Multiple choice (the category task: is the passage word an
animal?) is the demo's fine-tuning, which tests/test_demo.py (TensorFlow) and
tests/training/test_jax_runs.py (JAX) ask to reach 80% on held-out questions.

Sizes: the tiny preset without the vanilla head (its Dense(50313) costs as much
as the main head) and without the LM term (a second cross-entropy over the same
[batch, n, 50,313] logits: a third of a step; the tasks learn as fast without it,
measured 2026-11-27: span F1 0.94/1.0 at steps 175/200 against 0.98/1.0 with it;
multiple-choice quarter losses 8.59, 2.86, 0.64, 0.25 against 8.56, 3.11, 0.73, 0.33),
short texts, batch 32 (the span proof's: 16), only the output block the task selects (the
preset's other two add their layers, gradients and optimizer updates to the trace: the two
proofs 95 s -> 84 s alone, measured when routing still branched); dropout 0 converges in
fewer steps. No XLA: the suite compiles XLA at its cheapest optimisation level
(tests/conftest.py), whose code runs these 100-200 steps slower than TensorFlow's own
kernels.
"""

import keras
import pytest

import nemot
from nemot.data.qa.pipelines import examples_dataset
from nemot.data.synthetic import qa as synthetic
from nemot.training import NeMoTLoss


def fit(train, n, steps, rate, optimizer=nemot.optimizers.Adam, epoch_steps=25, batch_size=32):
    keras.utils.set_random_seed(0)
    # Only the blocks the examples select: each further block adds to the trace and
    # changes nothing else (no example runs through it).
    blocks = tuple(sorted({ex.task for ex in train}))
    config = nemot.NeMoTConfig.preset("tiny").replace(max_text_length=n, vanilla_head=False,
                                                      dropout=0.0, vanilla_attention_dropout=0.0,
                                                      output_blocks=blocks)
    model = nemot.build_model(config)
    model.compile(optimizer(rate), loss=NeMoTLoss(lm_weight=0, vanilla_weight=0),
                  jit_compile=False)
    dataset = examples_dataset(train, batch_size=batch_size, max_text_length=n, seed=0)
    history = model.fit(dataset, epochs=steps // epoch_steps, steps_per_epoch=epoch_steps,
                        shuffle=False, verbose=0)
    return model, history.history


@pytest.fixture(scope="module")
def tok():
    return nemot.data.Tokenizer()


def test_synthetic_examples_are_seeded_and_answerable():
    first, again = synthetic.choice_examples(50, seed=4), synthetic.choice_examples(50, seed=4)
    assert first == again and first != synthetic.choice_examples(50, seed=5)
    for ex in first:
        assert ex.options[ex.label] == ex.passage and ex.passage not in ex.options[:ex.label]
    categories = synthetic.category_examples(200, seed=4)
    assert categories == synthetic.category_examples(200, seed=4)
    for ex in categories:
        assert ex.options == ("yes", "no") and ex.label == (ex.passage not in synthetic.ANIMALS)
    # balanced: chance is one half
    assert 80 < sum(ex.label for ex in categories) < 120
    for ex in synthetic.span_examples(50, seed=4):
        words = ex.passage.split()
        assert ex.answers == (words[synthetic.ORDINALS.index(ex.question)],)
