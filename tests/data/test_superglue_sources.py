"""SuperGLUE from TFDS gives the rows of the official jsonl files holding the same records.

The TFDS side is a ``GeneratorBasedBuilder`` named ``super_glue``, version 1.0.2, with
the configs and features of TFDS's ``super_glue/<config>``, which differ from the jsonl
fields: MultiRC one row per answer (``paragraph``, ``question``, ``answer``, nested
``idx``), ReCoRD one row per query with the entities' and answers' texts (sorted, once
each, no spans), WSC's spans beside the text, labels as ``ClassLabel`` s with TFDS's
class names (CB ``entailment, contradiction, neutral``; COPA ``choice1, choice2``;
BoolQ/WiC/WSC/MultiRC ``False, True``), -1 in test rows. The test writes those rows
from the official records and prepares them with ``download_and_prepare``."""

import numpy as np
import pytest
import tensorflow_datasets as tfds

from nemot.data.benchmarks import superglue
from nemot.data.raw import DataError
from tests.data.superglue_records import RECORDS
from tests.data.test_glue_sources import prepare_tfds

Text, Int = tfds.features.Text, np.int32
FALSE_TRUE = ["False", "True"]


def _label(names):
    return tfds.features.ClassLabel(names=names)


FEATURES = {  # TFDS super_glue/<config>:1.0.2
    "boolq": {"question": Text(), "passage": Text(), "idx": Int, "label": _label(FALSE_TRUE)},
    "cb": {"premise": Text(), "hypothesis": Text(), "idx": Int,
           "label": _label(["entailment", "contradiction", "neutral"])},
    "copa": {"premise": Text(), "choice1": Text(), "choice2": Text(), "question": Text(),
             "idx": Int, "label": _label(["choice1", "choice2"])},
    "multirc": {"paragraph": Text(), "question": Text(), "answer": Text(),
                "idx": {"paragraph": Int, "question": Int, "answer": Int},
                "label": _label(FALSE_TRUE)},
    "record": {"passage": Text(), "query": Text(),
               "entities": tfds.features.Sequence(Text()),
               "answers": tfds.features.Sequence(Text()),
               "idx": {"passage": Int, "query": Int}},
    "rte": {"premise": Text(), "hypothesis": Text(), "idx": Int,
            "label": _label(["entailment", "not_entailment"])},
    "wic": {"word": Text(), "sentence1": Text(), "sentence2": Text(), "start1": Int,
            "start2": Int, "end1": Int, "end2": Int, "idx": Int, "label": _label(FALSE_TRUE)},
    "wsc": {"text": Text(), "span1_index": Int, "span2_index": Int, "span1_text": Text(),
            "span2_text": Text(), "idx": Int, "label": _label(FALSE_TRUE)},
}


def tfds_rows_of(task, record):
    """TFDS's rows of one official record (written here from TFDS's documented features)."""
    config = task.lower()
    names = FEATURES[config].get("label")
    if task == "MultiRC":
        passage = record["passage"]
        return [{"paragraph": passage["text"], "question": q["question"], "answer": a["text"],
                 "idx": {"paragraph": record["idx"], "question": q["idx"], "answer": a["idx"]},
                 "label": a["label"]} for q in passage["questions"] for a in q["answers"]]
    if task == "ReCoRD":
        text = record["passage"]["text"]
        entities = sorted({text[e["start"]:e["end"] + 1] for e in record["passage"]["entities"]})
        return [{"passage": text, "query": qa["query"], "entities": entities,
                 "answers": sorted({a["text"] for a in qa["answers"]}),
                 "idx": {"passage": record["idx"], "query": qa["idx"]}} for qa in record["qas"]]
    row = {**record, **record.get("target", {})}
    label = row["label"]
    label = names.names.index(label) if isinstance(label, str) else int(label)
    return [{**{name: row[name] for name in FEATURES[config] if name != "label"},
             "label": label}]


def prepare_super_glue(data_dir, config, splits, features):
    """Prepare TFDS ``super_glue/<config>:1.0.2`` with ``{split: rows}`` in ``data_dir``."""
    prepare_tfds(data_dir, "super_glue", superglue.TFDS_VERSION, splits, features, config)


@pytest.fixture(scope="module")
def tfds_dirs(tmp_path_factory):
    """``(tfds_dir, bad_dir)``: every task's records as TFDS super_glue (train, validation
    and, for RTE, a test split), and in ``bad_dir`` a MultiRC with the jsonl's field name
    ``passage`` and a CB with the official files' class order."""
    root = tmp_path_factory.mktemp("super_glue")
    for task, records in RECORDS.items():
        rows = [row for record in records for row in tfds_rows_of(task, record)]
        splits = {"train": rows, "validation": rows}
        if task == "RTE":
            splits["test"] = [{**rows[0], "label": -1}]
        prepare_super_glue(root / "tfds", task.lower(), splits, FEATURES[task.lower()])
    multirc = [{("passage" if k == "paragraph" else k): v for k, v in row.items()}
               for row in tfds_rows_of("MultiRC", RECORDS["MultiRC"][0])]
    features = {("passage" if k == "paragraph" else k): v for k, v in FEATURES["multirc"].items()}
    prepare_super_glue(root / "bad", "multirc", {"validation": multirc}, features)
    cb = [row for record in RECORDS["CB"] for row in tfds_rows_of("CB", record)]
    prepare_super_glue(root / "bad", "cb", {"validation": cb},
                       {**FEATURES["cb"], "label": _label(list(superglue.CB_LABELS))})
    return root / "tfds", root / "bad"


def by_group(rows):
    """ReCoRD: a question's candidate rows as a set and its golds once each."""
    groups = {}
    for row in rows:
        groups.setdefault(row.group, set()).add((row.text_a, row.text_b, row.label, row.option,
                                                 frozenset(row.answers)))
    return list(groups.items())


@pytest.mark.parametrize("task", superglue.TASKS)
@pytest.mark.parametrize("split", ["train", "val"])
def test_tfds_gives_the_rows_of_the_files(superglue_dir, tfds_dirs, task, split):
    official = superglue.load_task(task, split, superglue_dir)
    from_tfds = superglue.load_task(task, split, tfds_dirs[0], source="tfds")
    assert from_tfds.task == task and f"TFDS super_glue/{task.lower()}:1.0.2" in from_tfds.source
    if task == "ReCoRD":
        assert by_group(from_tfds.rows) == by_group(official.rows)
    else:
        assert from_tfds.rows == official.rows


def test_record_candidates_come_in_tfds_order_with_each_gold_once(tfds_dirs):
    rows = superglue.load_task("ReCoRD", "val", tfds_dirs[0], source="tfds").rows
    first = [r for r in rows if r.group == "7"]
    assert [(r.option, r.label) for r in first] == [("France", 0), ("Paris", 1), ("U.S.", 0)]
    assert first[0].answers == ("Paris",)  # the file lists Paris twice (two spans)


def test_tfds_errors_name_the_dataset_feature_and_row(tfds_dirs):
    tfds_dir, bad_dir = tfds_dirs
    with pytest.raises(DataError, match=r"TFDS super_glue/multirc:1.0.2 \[validation\] in "
                                        r".*bad: field 'paragraph': expected the features "
                                        r"\['paragraph', 'question'"):
        superglue.load_task("MultiRC", "val", bad_dir, source="tfds")
    with pytest.raises(DataError, match=r"super_glue/cb:1.0.2 .*field 'label': expected the "
                                        r"class names \['entailment', 'contradiction', "
                                        r"'neutral'\], got \['contradiction', 'neutral', "
                                        r"'entailment'\]"):
        superglue.load_task("CB", "val", bad_dir, source="tfds")
    with pytest.raises(DataError, match=r"super_glue/rte:1.0.2 \[test\] .*: row 1: field "
                                        r"'label': expected a labelled row \(TFDS marks the "
                                        r"unlabelled test rows -1\), got -1"):
        superglue.load_task("RTE", "test", tfds_dir, source="tfds")
    with pytest.raises(DataError, match=r"super_glue/wsc/1.0.2: .*found nothing"):
        superglue.load_task("WSC", "val", bad_dir, source="tfds")
    with pytest.raises(DataError, match=r"field 'splits': expected a 'train' split, got "
                                        r"\['validation'\]"):
        superglue.load_task("CB", "train", bad_dir, source="tfds")
    with pytest.raises(ValueError, match=r"SuperGLUE source 'bucket': expected one of "
                                         r"\('files', 'tfds', 'hub'\)"):
        superglue.load_task("CB", "val", None, source="bucket")
