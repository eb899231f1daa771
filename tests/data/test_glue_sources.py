"""GLUE from TFDS and the Hugging Face hub give exactly the examples of the official tsv
files holding the same rows.

TFDS: a ``GeneratorBasedBuilder`` named ``glue``, version 2.0.0, with the configs and
features of TFDS's ``glue/<config>`` (T5's text field names, ``label`` a ``ClassLabel``
with TFDS's class names or STS-B's float32, ``idx`` int32; MNLI's
``validation_matched``/``validation_mismatched``; -1 in test rows), prepared with
``download_and_prepare`` (which shuffles the rows on disk, as for the real data).
Hub: ``datasets.Dataset`` s with ``nyu-mll/glue``'s columns and feature types, served
where ``datasets.load_dataset`` is called."""

import datasets
import numpy as np
import pytest
import tensorflow_datasets as tfds

from nemot.data.benchmarks import glue
from nemot.data.benchmarks.tfds_rows import tfds_rows
from nemot.data.raw import DataError
from tests.data.test_glue import MNLI_HEADER, mnli_row, write_tsv

# Rows as the files write them: (texts under T5's names, the label column's value).
ROWS = {
    "CoLA": {"train": [({"sentence": "Our friends won't buy this analysis."}, "1"),
                       ({"sentence": "They drank the pub dry."}, "1"),
                       ({"sentence": "The more we study verbs, the crazier they get."}, "1"),
                       ({"sentence": "Him left."}, "0")],
             "dev": [({"sentence": "The sailors rode the breeze clear of the rocks."}, "1")]},
    "SST-2": {"train": [({"sentence": "hide new secretions from the parental units "}, "0"),
                        ({"sentence": "it 's a \"charming\" and often affecting journey . "}, "1"),
                        ({"sentence": "the greatest musicians "}, "1")],
              "dev": [({"sentence": "unflinchingly bleak and desperate "}, "0")]},
    "MRPC": {"train": [({"sentence1": "Amrozi accused his brother , whom he called \" the "
                                      "witness \" .", "sentence2": "Referring to him as only \" "
                                      "the witness \" , Amrozi accused his brother ."}, "1"),
                       ({"sentence1": "Yucaipa owned Dominick 's .", "sentence2": "Yucaipa "
                                      "bought Dominick 's in 1995 ."}, "0")],
             "dev": [({"sentence1": "He said the foodservice pie business fits .",
                       "sentence2": "The foodservice pie business does not fit ."}, "0")]},
    "STS-B": {"train": [({"sentence1": "A plane is taking off.",
                          "sentence2": "An air plane is taking off."}, "5.000"),
                         ({"sentence1": "A man is playing a flute.",
                           "sentence2": "A man is playing a bamboo flute."}, "3.800"),
                         ({"sentence1": "Three men are playing chess.",
                           "sentence2": "Two men are playing chess."}, "2.600")],
              "dev": [({"sentence1": "A man with a hard hat is dancing.",
                        "sentence2": "A woman is slicing an onion."}, "0.667")]},
    "QQP": {"train": [({"question1": "How is the life of a math student?",
                        "question2": "Which level of prepration is enough for the exam jlpt5?"},
                       "0"),
                      ({"question1": "How do I control my horny emotions?",
                        "question2": "How do you control your horniness?"}, "1"),
                      ({"question1": "What causes stool color to change to yellow?",
                        "question2": "What can cause stool to come out as little balls?"}, "0"),
                      ({"question1": "Why are African-Americans so beautiful?",
                        "question2": "Why are hispanics so beautiful?"}, "0"),
                      ({"question1": "What is the best way to learn Caf\u00e9 French?",
                        "question2": "How can I learn French caf\u00e9 talk?"}, "1")],
            "dev": [({"question1": "Why do rockets look white?",
                      "question2": "Why are rockets and boosters painted white?"}, "1")]},
    "MNLI": {"train": [({"hypothesis": "Product and geography are what make cream skimming "
                                       "work. ", "premise": "Conceptually cream skimming has "
                                       "two basic dimensions - product and geography."},
                        "neutral"),
                       ({"hypothesis": "You lose the things to the following level if the "
                                       "people recall.", "premise": "you know during the "
                                       "season and i guess at at your level"}, "entailment"),
                       ({"hypothesis": "I don't know.", "premise": "I know."}, "contradiction")],
             "dev": [({"hypothesis": "Everyone really likes the newest benefits ",
                       "premise": "The new rights are nice enough"}, "neutral")]},
    "MNLI-mm": {"dev": [({"hypothesis": "Your contributions were of no help.",
                          "premise": "Your contribution helped make it possible."},
                         "contradiction")]},
    "QNLI": {"train": [({"question": "When did the third Digimon series begin?",
                         "sentence": "Unlike the two seasons before it, the third season "
                                     "moves away."}, "not_entailment"),
                        ({"question": "What came into force after the new constitution?",
                          "sentence": "The Lisbon Treaty came into force."}, "entailment")],
             "dev": [({"question": "What is the Grotto at Notre Dame?",
                       "sentence": "Immediately behind the basilica is the Grotto."},
                      "entailment")]},
    "RTE": {"train": [({"sentence1": "No Weapons of Mass Destruction Found in Iraq Yet.",
                        "sentence2": "Weapons of Mass Destruction Found in Iraq."},
                       "not_entailment"),
                      ({"sentence1": "A place of sorrow, after Pope John Paul II died.",
                        "sentence2": "Pope Benedict XVI is the new leader."}, "entailment")],
            "dev": [({"sentence1": "Dana Reeve, the widow of the actor, died at 44.",
                      "sentence2": "Christopher Reeve had an accident."}, "not_entailment")]},
}
TEST_ROWS = 2  # unlabelled rows of each TFDS test split


def _file_row(task, i, texts, value):
    """Row ``i`` of ``task``'s official tsv (its header: ``HEADERS[task]``)."""
    if task == "CoLA":
        return ["gj04", value, "" if value == "1" else "*", texts["sentence"]]
    if task == "SST-2":
        return [texts["sentence"], value]
    if task == "MRPC":
        return [value, str(1000 + i), str(2000 + i), texts["sentence1"], texts["sentence2"]]
    if task == "STS-B":
        return [str(i), "main-captions", "MSRvid", "2012test", f"{i:04d}", "none", "none",
                texts["sentence1"], texts["sentence2"], value]
    if task == "QQP":
        return [str(i), str(2 * i + 1), str(2 * i + 2), texts["question1"], texts["question2"],
                value]
    if task in ("MNLI", "MNLI-mm"):
        return mnli_row(i, texts["premise"], texts["hypothesis"], value)
    return [str(i), *texts.values(), value]  # QNLI, RTE: index, the two texts, label


HEADERS = {"CoLA": None, "SST-2": ["sentence", "label"],
           "MRPC": ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"],
           "STS-B": ["index", "genre", "filename", "year", "old_index", "source1", "source2",
                     "sentence1", "sentence2", "score"],
           "QQP": ["id", "qid1", "qid2", "question1", "question2", "is_duplicate"],
           "MNLI": MNLI_HEADER, "MNLI-mm": MNLI_HEADER,
           "QNLI": ["index", "question", "sentence", "label"],
           "RTE": ["index", "sentence1", "sentence2", "label"]}
CASES = [(task, split) for task in ROWS for split in ROWS[task]]


def write_glue_files(root):
    for task, splits in ROWS.items():
        for split, rows in splits.items():
            header = [HEADERS[task]] if HEADERS[task] else []
            write_tsv(glue.task_dir(root, task) / glue.SPECS[task].splits[split],
                      header + [_file_row(task, i, t, v) for i, (t, v) in enumerate(rows)])
    return root


def source_rows(task, split):
    """The TFDS / hub rows of ``task``'s ``split``: T5's fields, the class index (-1 in
    test splits) or the float score, the row number as ``idx``."""
    spec = glue.SPECS[task]
    rows = []
    for i, (texts, value) in enumerate(ROWS[task][split]):
        label = spec.classes.index(value) if spec.classes else float(value)
        rows.append({**texts, "label": label, "idx": i})
    return rows


def _tfds_splits(task):
    """``{TFDS split: rows}`` of the ``glue/<config>`` of ``task`` (MNLI: both dev files)."""
    spec = glue.SPECS[task]
    splits = {"train": source_rows(task, "train"), spec.validation: source_rows(task, "dev")}
    if task == "MNLI":
        splits["validation_mismatched"] = source_rows("MNLI-mm", "dev")
    blank = {name: f"unlabelled {name}" for name in spec.fields}
    test = [{**blank, "label": -1, "idx": i} for i in range(TEST_ROWS)]
    splits.update({"test_matched": test, "test_mismatched": test} if task == "MNLI"
                  else {"test": test})
    return splits


def prepare_tfds(data_dir, dataset, version, splits, features, config=None):
    """Prepare TFDS ``<dataset>[/<config>]:<version>`` in ``data_dir`` in TFDS's own format:
    ``{split: [row dicts]}`` with ``features`` (``{name: TFDS feature}``)."""
    with tfds.core.registered.skip_registration():  # TFDS's own builder stays registered
        class Builder(tfds.core.GeneratorBasedBuilder):
            name = dataset
            VERSION = tfds.core.Version(version)
            BUILDER_CONFIGS = [tfds.core.BuilderConfig(name=config)] if config else []

            def _info(self):
                return tfds.core.DatasetInfo(builder=self,
                                             features=tfds.features.FeaturesDict(features))

            def _split_generators(self, dl_manager):
                return {split: self._generate_examples(rows) for split, rows in splits.items()}

            def _generate_examples(self, rows):
                yield from enumerate(rows)

    Builder(data_dir=str(data_dir), config=config).download_and_prepare()


def prepare_glue(data_dir, config, splits, features):
    """Prepare TFDS ``glue/<config>:2.0.0`` with ``{split: rows}`` in ``data_dir``."""
    prepare_tfds(data_dir, "glue", glue.TFDS_VERSION, splits, features, config)


def tfds_features(task, fields=None):
    """TFDS ``glue/<config>``'s features: the texts (``fields``: other names), label, idx."""
    spec = glue.SPECS[task]
    label = tfds.features.ClassLabel(names=list(spec.names)) if spec.names else np.float32
    return {**{name: tfds.features.Text() for name in fields or spec.fields}, "label": label,
            "idx": np.int32}


@pytest.fixture(scope="module")
def glue_sources(tmp_path_factory):
    """``(files, tfds_dir, renamed_dir)``: the rows as official files, as TFDS glue (every
    config but WNLI) and, in ``renamed_dir``, a glue/rte with SuperGLUE's field names."""
    root = tmp_path_factory.mktemp("glue_sources")
    files = write_glue_files(root / "glue_data")
    for task in ROWS:
        if task != "MNLI-mm":  # its rows are glue/mnli's validation_mismatched
            prepare_glue(root / "tfds", glue.SPECS[task].config, _tfds_splits(task),
                         tfds_features(task))
    rte = [{"premise": r["sentence1"], "hypothesis": r["sentence2"], "label": r["label"],
            "idx": r["idx"]} for r in source_rows("RTE", "dev")]
    prepare_glue(root / "renamed", "rte", {"validation": rte},
                 tfds_features("RTE", fields=("premise", "hypothesis")))
    return files, root / "tfds", root / "renamed"


def content(examples):
    return [(e.task, e.fields, e.label) for e in examples]


@pytest.mark.parametrize("task,split", CASES)
def test_tfds_gives_the_examples_of_the_files(glue_sources, task, split):
    files, tfds_dir, _ = glue_sources
    raw = glue.read_task(task, files, split)
    from_tfds = glue.read_task(task, tfds_dir, split, source="tfds")
    assert content(from_tfds) == content(raw) and len(raw) == len(ROWS[task][split])
    # Each example keeps its row number: the file's line less the header.
    assert [e.line for e in from_tfds] == [e.line - (1 if task == "CoLA" else 2) for e in raw]
    assert f"TFDS glue/{glue.SPECS[task].config}:2.0.0" in from_tfds[0].source


def test_tfds_rows_are_shuffled_on_disk_and_put_back_in_file_order(glue_sources):
    _, tfds_dir, _ = glue_sources
    _, rows = tfds_rows("glue/qqp:2.0.0", tfds_dir, "train")
    on_disk = [row["idx"] for row in rows]
    assert sorted(on_disk) == list(range(5)) and on_disk != sorted(on_disk)
    questions = [e.fields["question1"] for e in glue.read_task("QQP", tfds_dir, "train", "tfds")]
    assert questions == [texts["question1"] for texts, _ in ROWS["QQP"]["train"]]


def test_tfds_labels_are_the_files_labels(glue_sources):
    _, tfds_dir, _ = glue_sources
    # CoLA's "acceptable" is the file's 1; MNLI's classes keep TFDS's order; STS-B's
    # float32 3.8 is the file's 3.800, not 3.799999952.
    assert [e.label for e in glue.read_task("CoLA", tfds_dir, "train", "tfds")] == [1, 1, 1, 0]
    assert [e.label for e in glue.read_task("MNLI", tfds_dir, "train", "tfds")] == [1, 0, 2]
    assert [e.label for e in glue.read_task("MNLI-mm", tfds_dir, "dev", "tfds")] == [2]
    assert [e.label for e in glue.read_task("STS-B", tfds_dir, "train", "tfds")] == \
        [5.0, 3.8, 2.6]


def test_tfds_errors_name_the_dataset_feature_and_row(glue_sources, tmp_path, monkeypatch):
    _, tfds_dir, renamed_dir = glue_sources
    with pytest.raises(DataError, match=r"TFDS glue/rte:2.0.0 \[validation\] in .*renamed: "
                                        r"field 'sentence1': expected the features "
                                        r"\['sentence1', 'sentence2', 'label', 'idx'\] of GLUE "
                                        r"RTE, got \['hypothesis', 'idx', 'label', 'premise'\]"):
        glue.read_task("RTE", renamed_dir, "dev", source="tfds")
    features, rows = tfds_rows("glue/rte:2.0.0", tfds_dir, "test")
    with pytest.raises(DataError, match=r"test: idx \d: field 'label': expected a labelled row "
                                        r"\(TFDS and the hub mark the unlabelled test rows -1\), "
                                        r"got -1"):
        glue.read_rows("RTE", features, rows, "TFDS glue/rte:2.0.0 test")
    with pytest.raises(DataError, match=r"glue/wnli/2.0.0: field 'dataset_info.json': expected "
                                        r"TFDS glue/wnli:2.0.0 prepared there \(`tfds build "
                                        r"glue/wnli:2.0.0 --data_dir=.*`.*\); found nothing"):
        glue.read_task("WNLI", tfds_dir, "dev", source="tfds")
    monkeypatch.setattr(glue, "TFDS_VERSION", "1.0.1")
    with pytest.raises(DataError, match=r"glue/rte/1.0.1: .*found \['2.0.0'\] in .*glue/rte"):
        glue.read_task("RTE", tfds_dir, "dev", source="tfds")
    with pytest.raises(FileNotFoundError, match="TFDS data directory .*absent does not exist"):
        glue.read_task("RTE", tmp_path / "absent", "dev", source="tfds")
    with pytest.raises(ValueError, match="needs data_dir: the TFDS data directory"):
        glue.read_task("RTE", None, "dev", source="tfds")


# ----------------------------------------------------------------------------- the hub

STR = datasets.Value("string")


def hub_features(task, label=None):
    """``nyu-mll/glue``'s features of ``task``'s config (``label``: another label feature)."""
    spec = glue.SPECS[task]
    if label is None:
        label = datasets.ClassLabel(names=list(spec.names)) if spec.names else \
            datasets.Value("float32")
    return datasets.Features({**{name: STR for name in spec.fields}, "label": label,
                              "idx": datasets.Value("int32")})


def serve_hub(monkeypatch, tables, calls=None):
    """``datasets.load_dataset`` serving ``{(config, split): Dataset}`` of ``nyu-mll/glue``."""
    def load_dataset(path, config=None, split=None):
        assert path == "nyu-mll/glue", path
        if calls is not None:
            calls.append((config, split))
        return tables[config, split]

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


def hub_table(task, rows, features=None):
    features = features or hub_features(task)
    return datasets.Dataset.from_dict({name: [row[name] for row in rows] for name in features},
                                      features=features)


@pytest.mark.parametrize("task,split", CASES)
def test_hub_gives_the_examples_of_the_files(glue_sources, monkeypatch, task, split):
    files, _, _ = glue_sources
    spec = glue.SPECS[task]
    hub_split = spec.validation if split == "dev" else split
    calls = []
    serve_hub(monkeypatch, {(spec.config, hub_split): hub_table(task, source_rows(task, split))},
              calls)
    from_hub = glue.read_task(task, None, split, source="hub")
    assert calls == [(spec.config, hub_split)]
    assert content(from_hub) == content(glue.read_task(task, files, split))
    assert from_hub[0].source == f"hub nyu-mll/glue {spec.config} [{hub_split}]"


def test_hub_stsb_float32_scores_are_the_files_decimals(monkeypatch):
    table = hub_table("STS-B", source_rows("STS-B", "train"))
    assert table[1]["label"] != 3.8  # float32 through Arrow: 3.799999952316284
    serve_hub(monkeypatch, {("stsb", "train"): table})
    assert [e.label for e in glue.read_task("STS-B", None, "train", "hub")] == [5.0, 3.8, 2.6]


@pytest.mark.parametrize("task,features,rows,message", [
    ("RTE", datasets.Features({"premise": STR, "hypothesis": STR,
                               "label": datasets.ClassLabel(names=list(glue.NLI2)),
                               "idx": datasets.Value("int32")}),
     [{"premise": "a", "hypothesis": "b", "label": 0, "idx": 0}],
     r"hub nyu-mll/glue rte \[validation\]: field 'sentence1': expected the features "
     r"\['sentence1', 'sentence2', 'label', 'idx'\] of GLUE RTE"),
    ("SST-2", hub_features("SST-2", datasets.ClassLabel(names=["neg", "pos"])),
     [{"sentence": "fine", "label": 1, "idx": 0}],
     r"field 'label': expected the class names \['negative', 'positive'\], got \['neg', 'pos'\]"),
    ("STS-B", hub_features("STS-B", datasets.ClassLabel(names=["low", "high"])),
     [{"sentence1": "a", "sentence2": "b", "label": 1, "idx": 0}],
     r"field 'label': expected a float32 similarity score, not classes, got \['low', 'high'\]"),
    ("RTE", None, [{"sentence1": "a", "sentence2": "b", "label": 0, "idx": 0},
                   {"sentence1": "c", "sentence2": "d", "label": -1, "idx": 1}],
     r"hub nyu-mll/glue rte \[validation\]: idx 1: field 'label': expected a labelled row"),
    ("STS-B", None, [{"sentence1": "a", "sentence2": "b", "label": -1.0, "idx": 0}],
     r"idx 0: field 'label': expected a labelled row .*, got -1.0"),
    ("RTE", None, [{"sentence1": "a", "sentence2": " ", "label": 0, "idx": 0}],
     r"idx 0: field 'sentence2': expected a non-empty text"),
])
def test_hub_errors_name_the_dataset_feature_and_row(monkeypatch, task, features, rows, message):
    config = glue.SPECS[task].config
    serve_hub(monkeypatch, {(config, "validation"): hub_table(task, rows, features)})
    with pytest.raises(DataError, match=message):
        glue.read_task(task, None, "dev", source="hub")


def test_sources_are_named_and_the_hub_takes_no_directory(tmp_path):
    with pytest.raises(ValueError, match=r"data_dir must be None \(got '.*'\); source='files'"):
        glue.read_task("RTE", tmp_path, "dev", source="hub")
    with pytest.raises(ValueError, match=r"GLUE source 'parquet': expected one of "
                                         r"\['files', 'tfds', 'hub'\]"):
        glue.read_task("RTE", tmp_path, "dev", source="parquet")
