"""The reproduction's experiments: every config loads, errors name the file and key, the
schedules are the paper's, splits are seeded, and one run trains end to end."""

import csv
import dataclasses
import tomllib
from pathlib import Path

import keras
import numpy as np
import pytest

from nemot.data.raw import DataError
from nemot.data.synthetic.minbert import write_minbert
from nemot.modact import data, experiment
from tests.data import benchmark_files as fixtures

CONFIGS = Path(__file__).resolve().parents[2] / "configs" / "modact"


@pytest.mark.parametrize("path", sorted(CONFIGS.glob("*.toml")), ids=lambda p: p.stem)
def test_every_config_loads_with_paper_numbers_for_its_variants(path):
    exp = experiment.load(path)
    assert exp.output_dir == f"runs/modact/{exp.name}" and exp.seeds
    names = experiment.variants(exp)
    assert all(f"{exp.name}/{v}" in experiment.PAPER for v in names)
    assert not experiment.synthetic(exp)
    assert experiment.synthetic(experiment.load(path, ["data.synthetic=8"]))


def test_configs_hold_the_papers_settings():
    cnn = experiment.load(CONFIGS / "cifar10_cnn.toml")
    assert (cnn.train.batch_size, cnn.train.epochs, cnn.train.lr_drops) == (128, 150, (0.5, 0.8))
    assert (cnn.data.validation_fraction, cnn.data.augment) == (0.2, True)
    names = experiment.load(CONFIGS / "names_lstm.toml")
    assert len(names.seeds) == 30 and names.train.optimizer == "sgd" and names.train.decay == 1e-4
    assert names.train.loss_reduction == "sum" and names.train.steps_per_execution == 0
    assert names.variants["C1"]["hidden"] == 40 and names.model["dropout"] == 0.2
    sst2 = experiment.load(CONFIGS / "sst2_lstm.toml")
    assert len(sst2.seeds) == 100 and sst2.train.batch_size == 5
    assert sst2.variants["modulated"]["tau"] == "tanhshrink"
    assert (sst2.data.layout, sst2.data.test_fraction) == ("sst5", 0.2)  # the paper's split


def test_bad_configs_name_the_file_and_key(tmp_path):
    text = (CONFIGS / "names_lstm.toml").read_text()
    path = tmp_path / "bad.toml"
    path.write_text(text.replace("hidden = 32", "hiden = 32"))
    with pytest.raises(ValueError, match="bad.toml: variants.modulated: unknown key\\(s\\) "
                                         "\\['hiden'\\]"):
        experiment.load(path)
    path.write_text(text.replace('optimizer = "sgd"', 'optimizer = "rmsprop"'))
    with pytest.raises(ValueError, match="bad.toml: \\[train\\]: optimizer='rmsprop'"):
        experiment.load(path)
    with pytest.raises(ValueError, match="override 'loss.x=1': expected a top-level key or "
                                         "one of model.\\*, data.\\*, train.\\*"):
        experiment.load(CONFIGS / "names_lstm.toml", ["loss.x=1"])
    path.write_text(text.replace('reproduction = "modact"', 'reproduction = "pals"'))
    with pytest.raises(ValueError, match="reproduction = 'pals': expected 'modact'"):
        experiment.load(path)


def test_learning_rate_schedules():
    cifar = experiment.TrainConfig(learning_rate=1e-3, lr_drops=(0.5, 0.8)).schedule(1000)
    assert [float(cifar(s)) for s in (0, 499, 501, 799, 801, 999)] == pytest.approx(
        [1e-3, 1e-3, 1e-4, 1e-4, 1e-5, 1e-5])
    names = experiment.TrainConfig(optimizer="sgd", learning_rate=0.01, decay=1e-4).schedule(1)
    assert float(names(5000)) == pytest.approx(0.01 / (1 + 1e-4 * 5000))


@pytest.mark.usefixtures("eager")
def test_a_summed_loss_moves_sgd_batch_size_times_as_far():
    x = np.array([[1, 2, 3], [4, 5, 0], [6, 0, 0], [7, 8, 9]], "int32")
    y = np.array([0, 1, 2, 1], "int32")
    steps = {}
    for reduction in ("mean", "sum"):
        keras.utils.set_random_seed(0)
        model = experiment.models.build(experiment.models.ModelConfig(
            "lstm", hidden=4, embedding_dim=3, vocab_size=10, num_classes=3))
        before = [w.numpy() for w in model.trainable_weights]
        train = experiment.TrainConfig(optimizer="sgd", learning_rate=0.1,
                                       loss_reduction=reduction)
        experiment.compile_model(model, train, total_steps=1)
        model.train_on_batch(x, y)
        steps[reduction] = [w.numpy() - b for w, b in zip(model.trainable_weights, before)]
    for mean, summed in zip(steps["mean"], steps["sum"]):
        np.testing.assert_allclose(summed, 4 * mean, rtol=1e-3, atol=1e-6)
    assert any(np.abs(step).max() > 0 for step in steps["mean"])
    with pytest.raises(ValueError, match="loss_reduction='total': expected one of"):
        experiment.TrainConfig(loss_reduction="total")


def test_a_whole_epoch_per_call_makes_the_same_updates():
    x = np.array([[1, 2, 3], [4, 5, 0], [6, 0, 0], [7, 8, 9]], "int32")
    y = np.array([0, 1, 2, 1], "int32")
    weights = []
    for steps_per_execution in (1, 0):
        keras.utils.set_random_seed(0)
        model = experiment.models.build(experiment.models.ModelConfig(
            "lstm", hidden=4, embedding_dim=3, vocab_size=10, num_classes=3))
        train = experiment.TrainConfig(optimizer="sgd", learning_rate=0.5, decay=0.1,
                                       steps_per_execution=steps_per_execution)
        experiment.compile_model(model, train, total_steps=4, steps_per_epoch=2)
        assert model.steps_per_execution == (steps_per_execution or 2)
        model.fit(x, y, batch_size=2, epochs=2, shuffle=False, verbose=0)
        weights.append([w.numpy() for w in model.trainable_weights])
    for one, whole in zip(*weights):
        np.testing.assert_allclose(one, whole, rtol=1e-5, atol=1e-6)


# (cell, padding side, also XLA-compiled): the modulated cell on both padding sides, the
# post side also XLA-compiled. The other cells (Keras's LSTMCell, extra_input_gate: the
# modulated cell's class with its other placement) take the same path: the padding is cut
# in the data pipeline (data.trim_padding), and the masked steps are skipped by the
# keras.layers.RNN around the cell, which carries the state past them whatever the cell
# computes (no cell reads the mask). Each cell ran here once (6.9 and 9.7 CPU s).
TRIM_CASES = [("modulated", "post", True), ("modulated", "pre", False)]


@pytest.mark.parametrize("cell, padding, jit", TRIM_CASES)
def test_trimmed_padding_makes_the_same_updates(cell, padding, jit):
    """Each batch cut to its longest sequence (a multiple of 2 columns): the same weights
    after three Adam steps as on the full width, bit for bit; a batch keeps its ids, in
    order, and its padding side. XLA-compiled, the same up to float32 round-off: XLA
    fuses and reorders the sums."""
    rng = np.random.default_rng(0)
    lengths = [1, 2, 3, 1, 2, 7, 2, 1, 3]
    x = data.pad_ids([list(rng.integers(1, 10, n)) for n in lengths], padding=padding)
    y = rng.integers(0, 2, len(lengths)).astype("int32")
    batches = [np.asarray(data.trim_padding(x[i:i + 3], y[i:i + 3], 2, padding)[0])
               for i in (0, 3)]
    assert [b.shape[1] for b in batches] == [4, 7]  # 3 -> 4; 7 -> 8, capped at the width
    assert (batches[0] == (x[:3, :4] if padding == "post" else x[:3, -4:])).all()
    weights = []
    for trim, compiled in ((0, False), (2, False), (2, True))[:3 if jit else 2]:
        keras.utils.set_random_seed(0)
        model = experiment.models.build(experiment.models.ModelConfig(
            "lstm", cell=cell, hidden=4, embedding_dim=3, vocab_size=10, num_classes=2))
        experiment.compile_model(model, experiment.TrainConfig(jit_compile=compiled),
                                 total_steps=3)
        batches = data.train_dataset((x, y), 3, seed=1, trim=trim, padding=padding)
        model.fit(batches, steps_per_epoch=3, epochs=1, verbose=0)
        weights.append([w.numpy() for w in model.trainable_weights])
    for full, trimmed, *xla in zip(*weights):
        np.testing.assert_array_equal(full, trimmed)
        for w in xla:
            np.testing.assert_allclose(w, full, rtol=1e-5, atol=1e-6)


def test_held_out_splits_are_seeded_and_disjoint(tmp_path):
    fixtures.names(tmp_path / "names")
    config = data.DataConfig("names", dir=str(tmp_path / "names"), test_fraction=0.34)
    first, second = data.load_splits(config), data._names(config)
    assert len(first.test[1]) == 3 and len(first.train[1]) == 3
    np.testing.assert_array_equal(first.test[0], second.test[0])
    rows = {tuple(r) for r in first.train[0]} | {tuple(r) for r in first.test[0]}
    assert len(rows) == 6 and first.vocab_size == 58 and first.num_classes == 3
    # "Novak" -> ids of N, o, v, a, k in the tutorial's alphabet (1-based), then padding
    width = first.train[0].shape[1]
    assert width == len("Slusarski")
    novak = (40, 15, 22, 1, 11) + (0,) * (width - 5)
    assert novak in rows


def test_sst2_words_get_training_vocabulary_ids(tmp_path):
    fixtures.sst2(tmp_path)
    splits = data.load_splits(data.DataConfig("sst2", dir=str(tmp_path), layout="glue"))
    vocabulary = data.word_vocabulary([s for s, _ in fixtures.SST2_TRAIN])
    assert vocabulary["the"] == 2 and vocabulary["greatest"] == 3  # most frequent first
    dev_first = [vocabulary.get(w, 1) for w in fixtures.SST2_DEV[1][0].split()]
    assert list(splits.test[0][1][:len(dev_first)]) == dev_first == [1, 1, 1, 1]
    assert splits.vocab_size == len(vocabulary) + 2


@pytest.mark.usefixtures("eager")
def test_sst2_by_default_is_the_papers_split_of_sst5_sentences(tmp_path):
    """Neutral sentences dropped, 0/1 -> 0 and 3/4 -> 1, lower-cased, train and dev pooled,
    test_fraction held out with split_seed (the paper: about 20% held out)."""
    labels = [0, 1, 2, 3, 4, 4, 2, 0, 3, 1]
    columns = ("id", "sentence", "sentiment")
    for split, part in (("train", range(0, 6)), ("dev", range(6, 10))):
        write_minbert(tmp_path / f"ids-sst-{split}.csv", columns,
                      [(f"id{i}", f"Word{i} Shared", labels[i]) for i in part])
    sentences, binary = data.sst5_sentences(tmp_path)
    kept = [i for i in range(10) if labels[i] != 2]
    assert sentences == [f"word{i} shared" for i in kept]
    assert list(binary) == [int(labels[i] >= 3) for i in kept]

    config = data.DataConfig("sst2", dir=str(tmp_path), test_fraction=0.2, split_seed=3)
    splits = data.load_splits(config)
    assert len(splits.test[1]) == 2 and len(splits.train[1]) == 6  # ceil(0.2 * 8) held out
    held = np.random.default_rng(3).permutation(8)[:2]
    assert list(splits.test[1]) == [binary[i] for i in held]
    vocabulary = data.word_vocabulary(s for i, s in enumerate(sentences) if i not in held)
    assert splits.vocab_size == len(vocabulary) + 2  # of the training sentences only
    # no sentence on both sides: each test sentence's own word is unknown to training
    assert (splits.test[0][:, 0] == 1).all() and (splits.train[0][:, 0] > 1).all()

    # every variant of the SST-2 config trains a step on these sentences
    exp = experiment.load(CONFIGS / "sst2_lstm.toml", [
        f"data.dir={tmp_path}", "data.split_seed=3", "model.hidden=4", "model.embedding_dim=3",
        "variants.C1.hidden=5", "train.jit_compile=false"])
    assert exp.data == config and experiment.TRIM > 0
    for variant in experiment.variants(exp):
        model_config = experiment.model_config(exp, variant, splits)
        model = experiment.models.build(model_config)
        experiment.compile_model(model, exp.train, total_steps=1)
        source = experiment.data_source(exp, splits, 0, experiment.padding_trim(model_config))
        before = [w.numpy() for w in model.trainable_weights]
        model.fit(source.train(0, 5, None), steps_per_epoch=1, verbose=0)
        after = [w.numpy() for w in model.trainable_weights]
        assert all(np.isfinite(w).all() for w in after)
        assert (before[0] != after[0]).any() and (before[-2] != after[-2]).any()  # embedding, logits
        assert 0 <= source.metric(model) <= 1

    write_minbert(tmp_path / "ids-sst-dev.csv", columns, [("x", "a", 7)])
    data.load_splits.cache_clear()
    with pytest.raises(DataError, match=r"ids-sst-dev.csv.*sentiment.*one of \[0, 1, 2, 3, 4\]"):
        data.load_splits(config)


@pytest.mark.usefixtures("eager")
def test_a_names_run_trains_through_the_shared_loop(tmp_path):
    config = CONFIGS / "names_lstm.toml"
    exp = experiment.load(config, ["data.synthetic=96", "train.epochs=3", "model.hidden=8",
                                   "model.embedding_dim=8", "train.learning_rate=0.02",
                                   f"output_dir={tmp_path}"])
    metrics = experiment.run_one(exp, "modulated", 0, tmp_path / "run")
    assert set(metrics) == {"test_accuracy", "train_accuracy"}
    assert all(0 <= v <= 1 for v in metrics.values())
    assert (tmp_path / "run" / "model_last.keras").exists()
    resolved = tomllib.loads((tmp_path / "run" / "config.toml").read_text())  # the protocol's
    assert (resolved["reproduction"], resolved["name"], resolved["variant"]) == (
        "modact", "names_lstm", "modulated") and resolved["model"]["cell"] == "modulated"
    with open(tmp_path / "run" / "results.csv") as f:
        losses = [float(row["loss"]) for row in csv.DictReader(f)]
    assert len(losses) == 3 and losses[2] < losses[0]


def test_a_cifar_run_with_augmentation_and_validation(tmp_path):
    exp = experiment.load(CONFIGS / "cifar10_cnn.toml", [
        "data.synthetic=40", "train.epochs=1", "train.batch_size=16", f"output_dir={tmp_path}"])
    metrics = experiment.run_one(exp, "modulated", 1, tmp_path / "run")
    assert set(metrics) == {"test_accuracy", "train_accuracy", "validation_accuracy"}
    splits = data.load_splits(exp.data)
    assert [len(y) for _, y in (splits.train, splits.validation, splits.test)] == [32, 8, 8]
    # the reported accuracies are the saved model's on the held-out splits
    model = keras.saving.load_model(tmp_path / "run" / "model_last.keras")
    for split, key in ((splits.validation, "validation_accuracy"), (splits.test, "test_accuracy")):
        predicted = model.predict(split[0].astype("float32") / 255.0, verbose=0).argmax(-1)
        assert metrics[key] == pytest.approx(float(np.mean(predicted == split[1])))
    # training batches are shifted and mirrored copies of the images, scaled to [0, 1]
    plain = next(iter(data.train_dataset(splits.train, 16, seed=1, images=True)))[0].numpy()
    augmented = next(iter(data.train_dataset(splits.train, 16, seed=1, augment=True,
                                             images=True)))[0].numpy()
    assert plain.shape == augmented.shape == (16, 32, 32, 3)
    assert 0 <= augmented.min() and augmented.max() <= 1 and not np.allclose(plain, augmented)
    with open(tmp_path / "run" / "results.csv") as f:
        assert len(list(csv.DictReader(f))) == 1  # one epoch of ceil(32 / 16) steps
