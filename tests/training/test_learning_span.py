"""Proof that learning works, span generation: a tiny NeMoT fitted on synthetic span
questions answers held-out ones by greedy decoding (sizes: see test_learning.py)."""

import keras

from nemot import vocab
from nemot.data import Formatter
from nemot.data.synthetic import qa as synthetic
from nemot.training import trainer
from tests.training.test_learning import fit, tok  # noqa: F401 (tok is a fixture)


def test_span_generation_reaches_f1_09(tok):
    n = 8
    fmt = Formatter(tok, max_text_length=10)

    def short(examples):
        """The examples whose text is at most n tokens (1,804 of the 2,000 training ones,
        94 of the 100 held out): the logits of every text position over the 50,313 ids are
        most of a step, so n = 8 instead of the 10 that all need is a fifth less of it."""
        return [ex for ex in fmt.format_batch(examples) if len(ex.token_ids) <= vocab.NUM_AUX + n]

    # Two passage words: copying either one at random scores F1 0.5, so 0.9 needs the
    # position named by the question. Batches of 16 learn it in as many steps as batches
    # of 32 at two thirds of a step's cost (n = 10, F1 at step 250 with the initial
    # weights of seeds 0, 1, 2: 0.95, 0.99, 0.99 with 16; seed 0 with 32: 0.74 at 200,
    # 1.0 at 250); batches of 8 had not learnt it by step 400 with seed 0. With n = 8 it
    # is learnt by step 200 (F1 1.0, 0.94, 1.0, 0.99 with seeds 0-3; 1.0 for all four at
    # 225 and 250; measured 2026-11-29), so 225 steps keep 25 of margin.
    train = short(synthetic.span_examples(2000, seed=1, passage_words=2))
    val = short(synthetic.span_examples(100, seed=2, passage_words=2))
    # Keras 3's own Adam: its second moment of an embedding row sums the squares of a
    # repeated token's gradients (nemot.optimizers), which steps faster on this positional
    # copy task; nemot's dense Adam reached F1 0.05-0.37 in 300 steps at rates 3e-3..1e-2
    # on the three-word task (measured 2026-11-25) and needs more. Higher rates do not
    # learn faster here: 5e-3 (with or without a warm-up) and 1e-2 stall at F1 0.1-0.6.
    model, history = fit(train, n, steps=225, rate=3e-3, optimizer=keras.optimizers.Adam,
                         batch_size=16)
    f1 = trainer.score_examples(model, val, "f1", label_mode=False, tokenizer=tok,
                                max_new_tokens=3, jit_compile=False)
    assert f1 >= 0.9, (f1, history["task_loss"])
