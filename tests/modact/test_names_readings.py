"""The NAMES readings the paper leaves open, as switches, on tiny generated files: the
split by distinct name, deduplication, the tutorial's character sets and unknown
characters, padding before or after the name and not masked, and the test accuracy
over epochs."""

import csv
import string

import keras
import numpy as np
import pytest

from nemot.modact import data, experiment, models
from tests.modact.test_experiment import CONFIGS

LANGUAGES = {
    "Arabic": ["Nader", "Nader", "Nader", "Haddad", "Haddad", "Asker"],
    "German": ["Groß", "Haddad", "Abel", "Brandt", "Kuhn"],
    "Russian": ["Abu-Bakr", "Ivanov", "Ivanov", "Petrov", "O'Neill", "Zhukov"],
}


def write_names(directory):
    directory.mkdir(parents=True, exist_ok=True)
    for language, lines in LANGUAGES.items():
        (directory / f"{language}.txt").write_bytes(("\n".join(lines) + "\n").encode())
    return str(directory)


def decode(row, alphabet):
    return "".join(alphabet[i - 1] if i <= len(alphabet) else "?" for i in row if i)


def test_split_by_names_keeps_every_test_name_out_of_training(tmp_path):
    directory = write_names(tmp_path / "names")
    alphabet = data.NAMES_ALPHABETS["tutorial"]
    for seed in range(6):
        by_rows = data._names(data.DataConfig("names", dir=directory, test_fraction=0.3,
                                              split_seed=seed))
        by_names = data._names(data.DataConfig("names", dir=directory, test_fraction=0.3,
                                               split_seed=seed, split="names"))
        train = {decode(r, alphabet) for r in by_names.train[0]}
        test = [decode(r, alphabet) for r in by_names.test[0]]
        assert not train & set(test)
        # ceil(0.3 x 12 distinct names) = 4 names, with every row of each (17 rows in all)
        assert len(set(test)) == 4 and len(test) + len(by_names.train[1]) == 17
        assert len(by_rows.test[1]) == 6  # ceil(0.3 x 17 rows)
        if "Nader" in test:
            assert test.count("Nader") == 3
        if "Haddad" in test:  # in two languages: both go
            assert sorted(by_names.test[1][np.array(test) == "Haddad"]) == [0, 0, 1]


def test_deduplicate_keeps_each_name_once_per_language(tmp_path):
    directory = write_names(tmp_path / "names")
    alphabet = data.NAMES_ALPHABETS["tutorial"]
    splits = data._names(data.DataConfig("names", dir=directory, test_fraction=0.01,
                                         deduplicate=True))
    rows = [(decode(r, alphabet), int(y)) for part in (splits.train, splits.test)
            for r, y in zip(*part)]
    assert len(rows) == len(set(rows)) == 13  # 17 rows, 2 Nader + 1 Haddad + 1 Ivanov fewer
    assert ("Haddad", 0) in rows and ("Haddad", 1) in rows


@pytest.mark.parametrize("alphabet, unknown, expected, vocab", [
    # unicodeToAscii of the final notebook: ß and - dropped
    ("tutorial", "drop", {"Gro", "AbuBakr", "O'Neill"}, 58),
    # the tutorial's data.py keeps the hyphen
    ("tutorial_script", "drop", {"Gro", "Abu-Bakr", "O'Neill"}, 59),
    # the first version: letters only, and find() = -1 puts every other character on "Z"
    ("letters", "last", {"GroZ", "AbuZBakr", "OZNeill"}, 53),
    # one id of its own (decoded "?")
    ("tutorial", "id", {"Gro?", "Abu?Bakr", "O'Neill"}, 59),
])
def test_the_tutorials_character_sets_and_unknown_characters(tmp_path, alphabet, unknown,
                                                             expected, vocab):
    directory = write_names(tmp_path / "names")
    splits = data._names(data.DataConfig("names", dir=directory, test_fraction=0.01,
                                         alphabet=alphabet, unknown=unknown))
    letters = data.NAMES_ALPHABETS[alphabet]
    read = {decode(r, letters) for part in (splits.train, splits.test) for r in part[0]}
    assert expected <= read and splits.vocab_size == vocab
    assert max(int(part[0].max()) for part in (splits.train, splits.test)) < vocab
    assert data.NAMES_ALPHABETS["letters"] == string.ascii_letters


def test_settings_name_their_choices():
    with pytest.raises(ValueError, match=r"split='words': expected one of \('rows', 'names'\)"):
        data.DataConfig("names", dir="x", split="words")
    with pytest.raises(ValueError, match=r"unknown='skip'"):
        data.DataConfig("names", dir="x", unknown="skip")
    with pytest.raises(ValueError, match=r"deduplicate=True: a NAMES setting"):
        data.DataConfig("sst2", dir="x", test_fraction=0.2, deduplicate=True)


def test_padding_before_or_after_and_the_mask():
    assert data.pad_ids([[1, 2], [3]]).tolist() == [[1, 2], [3, 0]]
    assert data.pad_ids([[1, 2], [3]], padding="pre").tolist() == [[1, 2], [0, 3]]
    keras.utils.set_random_seed(0)
    ids = np.array([[5, 6, 7, 0, 0, 0]], "int32")
    for mask in (True, False):
        model = models.build(models.ModelConfig("lstm", cell="modulated", hidden=4,
                                                embedding_dim=3, vocab_size=9, num_classes=2,
                                                mask_padding=mask))
        padded, unpadded = model(ids), model(ids[:, :3])
        # masked, trailing padding changes nothing; unmasked, the cell runs over it
        assert np.allclose(padded, unpadded, atol=1e-6) == mask


def test_test_accuracy_over_epochs(tmp_path):
    overrides = ["data.synthetic=96", "train.epochs=3", "model.hidden=8",
                 "model.embedding_dim=8", "train.learning_rate=0.02", "model.dropout=0.5",
                 "train.jit_compile=false", f"output_dir={tmp_path}"]
    plain = experiment.run_one(experiment.load(CONFIGS / "names_lstm.toml", overrides),
                               "C2", 0, tmp_path / "plain")
    exp = experiment.load(CONFIGS / "names_lstm.toml", overrides + ["train.test_each_epoch=true"])
    metrics = experiment.run_one(exp, "C2", 0, tmp_path / "run")
    logs = {}
    for run in ("plain", "run"):
        with open(tmp_path / run / "results.csv") as f:
            logs[run] = list(csv.DictReader(f))
    per_epoch = [float(row["val_metric"]) for row in logs["run"]]
    assert len(per_epoch) == 3
    # scoring the test split each epoch leaves training as it was
    assert [r["loss"] for r in logs["run"]] == [r["loss"] for r in logs["plain"]]
    assert (metrics["test_accuracy"], metrics["train_accuracy"]) == (
        plain["test_accuracy"], plain["train_accuracy"])
    assert metrics["test_accuracy"] == pytest.approx(per_epoch[-1])
    assert metrics["test_accuracy_epoch_mean"] == pytest.approx(np.mean(per_epoch))
    assert metrics["test_accuracy_epoch_best"] == max(per_epoch)
