"""POS tags in the QA pipelines (highlighting): aligned rows, resume, pool, fit.

The tagger is a real NLTK perceptron trained on a tiny hand-tagged corpus
(``tests.data.tagger_helper``).
"""

import itertools

import keras
import numpy as np
import pytest
import tensorflow as tf

import nemot
from nemot import vocab
from nemot.data import Formatter
from nemot.data.batching import batches
from nemot.data.pos_tags import POS_PAD_ID, SPECIAL_TOKEN, PosTagger, pad_pos_tags, pos_tagger_for
from nemot.data.qa import registry
from nemot.data.qa.pipelines import examples_dataset, qa_dataset, validation_dataset
from nemot.data.qa.pool import pool_dataset
from nemot.training import NeMoTLoss
from tests.data.tagger_helper import perceptron  # noqa: F401 (fixture)

N = 32
PAD = vocab.PAD_ID


@pytest.fixture(scope="module")
def tagger(tok, perceptron):
    return PosTagger(perceptron, tok)


def tagged_rows(ds, count=None):
    """``(token_ids, task_targets, lm_targets, pos_tags)`` rows of the first batches."""
    return [row for x, y in itertools.islice(ds, count)
            for row in zip(x["token_ids"].numpy(), y["task_targets"].numpy(),
                           y["lm_targets"].numpy(), x["pos_tags"].numpy())]


def assert_same(a, b):
    assert len(a) == len(b)
    for r, s in zip(a, b):
        for u, v in zip(r, s):
            np.testing.assert_array_equal(u, v)


def assert_aligned(rows, tagger):
    """Every row's tags are those of its own token ids, -1 exactly at padding."""
    token_ids = np.stack([r[0] for r in rows])
    tags = np.stack([r[3] for r in rows])
    assert tags.dtype == np.int32 and tags.shape == (len(rows), N)
    np.testing.assert_array_equal(tags, tagger.tag_batch(token_ids))
    np.testing.assert_array_equal(tags == POS_PAD_ID, token_ids[:, 3:] == PAD)


def test_qa_dataset_tags_each_formatted_example_and_pads_with_minus_one(raw_dirs, tok, tagger):
    kwargs = dict(batch_size=3, max_text_length=N, shuffle=False, repeat=False, tokenizer=tok)
    ds = qa_dataset("race", "train", data_dir=raw_dirs["race"], pos_tagger=tagger, **kwargs)
    assert ds.element_spec[0]["pos_tags"] == tf.TensorSpec([3, N], tf.int32)
    rows = tagged_rows(ds)
    formatted = Formatter(tok, max_text_length=N).format_batch(
        registry.load_examples("race", "train", raw_dirs["race"]))
    assert len(formatted) == 4 and len(rows) == 6
    expected = pad_pos_tags([tagger.tag_text_ids(f.token_ids[3:]) for f in formatted], N)
    for f, row, tags in zip(formatted, rows, expected):
        assert row[0][:len(f.token_ids)].tolist() == f.token_ids
        np.testing.assert_array_equal(row[3], tags)
        length = len(f.token_ids) - 3
        assert (row[3][length:] == POS_PAD_ID).all() and (row[3][:length] >= 0).all()
        assert row[3][0] == SPECIAL_TOKEN  # <p1>
        assert 0 in row[3] and 1 in row[3]  # the story's nouns and verbs
    # The last batch is padded with ignored rows, untagged.
    assert all((r[3] == POS_PAD_ID).all() for r in rows[4:])
    # Tags add a column; they change no other value.
    plain = qa_dataset("race", "train", data_dir=raw_dirs["race"], **kwargs)
    assert "pos_tags" not in plain.element_spec[0]
    plain_rows = [r for x, y in plain for r in zip(x["token_ids"].numpy(),
                                                   y["task_targets"].numpy(),
                                                   y["lm_targets"].numpy())]
    assert_same([r[:3] for r in rows], plain_rows)


def test_shuffled_epochs_resume_exactly_with_their_tags(raw_dirs, tok, tagger):
    formatted = Formatter(tok, max_text_length=N).format_batch(
        registry.load_examples("mctest", "train", raw_dirs["mctest"]))

    def rows(start_batch=0, count=None):
        return tagged_rows(examples_dataset(formatted, batch_size=3, max_text_length=N, seed=1,
                                            start_batch=start_batch, pos_tagger=tagger), count)

    full = rows(count=8)  # 24 rows: three epochs of 8
    assert_aligned(full, tagger)
    assert len(full) == 24 and len({r[0].tobytes() for r in full}) > 1
    for k in (1, 5):
        assert_same(rows(start_batch=k, count=8 - k), full[3 * k:])


def test_pool_and_validation_datasets_carry_aligned_tags(raw_dirs, tok, tagger):
    pool = pool_dataset(("race", "boolq"), data_dir=raw_dirs, batch_size=4, max_text_length=N,
                        seed=2, tokenizer=tok, pos_tagger=tagger)
    full = tagged_rows(pool, 5)
    assert_aligned(full, tagger)
    assert {int(r[0][2]) for r in full} == {vocab.task_token_id("mqa"),
                                            vocab.task_token_id("gqa")}
    resumed = pool_dataset(("race", "boolq"), data_dir=raw_dirs, batch_size=4,
                           max_text_length=N, seed=2, tokenizer=tok, pos_tagger=tagger,
                           start_batch=2)
    assert_same(tagged_rows(resumed, 3), full[8:])
    rows = tagged_rows(validation_dataset("race", "dev", data_dir=raw_dirs["race"], batch_size=3,
                                          max_text_length=N, tokenizer=tok, pos_tagger=tagger))
    assert len(rows) == 6
    assert_aligned(rows, tagger)


def test_replica_batches_split_the_tags_with_their_rows():
    rng = np.random.default_rng(0)
    rows = [(rng.integers(0, 100, 3 + 4).astype(np.int32), np.zeros(4, np.int32),
             np.zeros(4, np.int32), np.full(4, k, np.int32)) for k in range(3)]
    context = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                         num_replicas_in_sync=2)
    out = list(batches(rows, batch_size=4, input_context=context))
    assert len(out) == 2
    np.testing.assert_array_equal(out[0][0]["pos_tags"][:, 0], [0, 1])
    np.testing.assert_array_equal(out[0][0]["token_ids"], np.stack([rows[0][0], rows[1][0]]))
    # The short global batch is filled with an untagged <pad> row.
    np.testing.assert_array_equal(out[1][0]["pos_tags"], [[2] * 4, [POS_PAD_ID] * 4])


def test_pos_tagger_for_follows_the_model_config(tok, tagger):
    cfg = nemot.NeMoTConfig.preset("tiny")
    assert pos_tagger_for(cfg) is None
    assert pos_tagger_for(cfg.replace(reading_strategies=("aoi",))) is None
    words_alone = pos_tagger_for(cfg.replace(reading_strategies=("highlighting",),
                                             compat_tag_words_alone=True), tagger.tagger, tok)
    assert isinstance(words_alone, PosTagger) and words_alone.words_alone


def test_a_highlighting_model_trains_on_a_tagged_qa_dataset(raw_dirs, tok, tagger):
    keras.utils.set_random_seed(3)
    cfg = nemot.NeMoTConfig.preset("tiny").replace(
        num_vanilla_layers=1, num_nm_layers=1, output_blocks=("lm",),
        reading_strategies=("highlighting",))
    model = nemot.build_model(cfg)
    model.compile(nemot.optimizers.Adam(1e-2), loss=NeMoTLoss(), jit_compile=False)
    ds = qa_dataset("race", "train", data_dir=raw_dirs["race"], batch_size=2, max_text_length=N,
                    task_token="lm", tokenizer=tok, pos_tagger=pos_tagger_for(cfg, tagger.tagger,
                                                                              tok))
    before = np.array(model.backbone.reading_strategies.highlighting.weights[0])
    history = model.fit(ds, epochs=3, steps_per_epoch=2, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    after = np.array(model.backbone.reading_strategies.highlighting.weights[0])
    # Only categories that occur in the data get a gradient.
    changed = np.abs(after - before).max(axis=1) > 0
    seen = np.unique(np.concatenate([r[3] for r in tagged_rows(ds, 2)]))
    assert changed[SPECIAL_TOKEN] and set(np.flatnonzero(changed)) <= set(seen[seen >= 0])
