"""PIQA, Social IQa and WinoGrande: JSON lines, labels in the line or in a ``.lst`` file.

- PIQA (Bisk et al., 2020), two published layouts: the authors' repository
  (``train.jsonl``, ``valid.jsonl`` + ``{split}-labels.lst``, unlabelled ``tests.jsonl``)
  and AI2's ``physicaliqa-train-dev.zip`` (``physicaliqa-train-dev/{train,dev}.jsonl`` +
  ``{train,dev}-labels.lst``); fields ``goal``, ``sol1``, ``sol2``, labels 0/1. Split
  ``valid`` (alias ``dev``) reads ``valid.*`` or ``dev.*``.
  Format ``<q> goal (1) sol1 (2) sol2 <sep>`` -> ``(k)``.
- SIQA (Sap et al., 2019): ``socialiqa-train-dev/{train,dev}.jsonl`` with ``context``,
  ``question``, ``answerA``-``answerC`` and ``{split}-labels.lst`` (1-3).
  Format ``<p1> context <q> question (1) (2) (3) <sep>`` -> ``(k)``.
- WinoGrande (Sakaguchi et al., 2020): ``winogrande_1.1/train_{xs,s,m,l,xl}.jsonl``,
  ``dev.jsonl``, ``test.jsonl`` with ``sentence``, ``option1``, ``option2``, ``answer``
  ("1"/"2", absent in test). Split ``train_<size>`` picks the training size; ``train``
  is ``train_xl`` (the thesis). Format ``<q> sentence (1) o1 (2) o2 <sep>`` -> ``(k)``.
"""

import nemot.data.raw as raw
from nemot.data.qa.readers import common

WINOGRANDE_SIZES = ("xs", "s", "m", "l", "xl")


def labelled_jsonl(data_dir, split, names, to_example, tops=(), labels=None):
    """Examples of the first of ``names`` (``{name}.jsonl``) found, with labels from
    ``{name}-labels.lst`` beside it when ``labels=(base, n_options)`` is given."""
    (path,) = common.find_files(data_dir, [f"{name}.jsonl" for name in names], split, tops)
    records = list(raw.iter_jsonl(path))
    label_list = [None] * len(records)
    if labels is not None:
        base, n_options = labels
        label_list = common.read_label_file(path.with_name(f"{path.stem}-labels.lst"),
                                            len(records), base, n_options, examples=path)
    for (line_no, record), label in zip(records, label_list):
        yield to_example(record, label, path, line_no)


def piqa_example(record, label, path, where):
    options = [raw.get(record, key, path, where) for key in ("sol1", "sol2")]
    return common.multiple_choice("piqa", record.get("id", where),
                                  raw.get(record, "goal", path, where), options, label)


def siqa_example(record, label, path, where):
    options = [raw.get(record, f"answer{k}", path, where) for k in "ABC"]
    return common.multiple_choice("siqa", where, raw.get(record, "question", path, where),
                                  options, label, passage=raw.get(record, "context", path, where))


def winogrande_example(record, label, path, where):
    options = [raw.get(record, key, path, where) for key in ("option1", "option2")]
    answer = record.get("answer", "")
    label = None if answer == "" else common.letter_label(answer, ("1", "2"), path, where, "answer")
    return common.multiple_choice("winogrande", record.get("qID", where),
                                  raw.get(record, "sentence", path, where), options, label)


def read_piqa(data_dir, split):
    """PIQA ``train``/``valid`` (labelled) or ``test`` (unlabelled), either layout."""
    tops = ("physicaliqa-train-dev", "piqa")
    if split == "test":
        return labelled_jsonl(data_dir, split, ["tests"], piqa_example, tops)
    names = ["valid", "dev"] if split == "valid" else [split]
    return labelled_jsonl(data_dir, split, names, piqa_example, tops, labels=(0, 2))


def read_siqa(data_dir, split):
    """Social IQa ``train``/``dev`` from the raw directory (``socialiqa-train-dev``)."""
    return labelled_jsonl(data_dir, split, [split], siqa_example, ("socialiqa-train-dev",),
                          labels=(1, 3))


def winogrande_file(split):
    """``train_xl`` for ``train``, ``train_<size>`` as given, else the split itself."""
    return "train_xl" if split == "train" else split


def read_winogrande(data_dir, split):
    """WinoGrande ``train`` (= ``train_xl``), ``train_xs`` ... ``train_xl``, ``dev`` or ``test``."""
    return labelled_jsonl(data_dir, split, [winogrande_file(split)], winogrande_example,
                          ("winogrande_1.1",))


def _hub(name, config, split, to_example, label_of):
    for i, row in enumerate(raw.hub_rows(name, config, raw.hub_split(split))):
        yield to_example(row, label_of(row), f"hub:{name}", i)


def read_piqa_hub(split):
    """PIQA from the hub (``ybisk/piqa``: ``goal``, ``sol1``, ``sol2``, ``label`` 0/1, -1 in
    test)."""
    return _hub("ybisk/piqa", None, split, piqa_example,
                lambda row: None if row["label"] < 0 else row["label"])


def read_siqa_hub(split):
    """Social IQa from the hub (``allenai/social_i_qa``: ``label`` is the string "1"-"3")."""
    return _hub("allenai/social_i_qa", None, split, siqa_example, lambda row: int(row["label"]) - 1)


def read_winogrande_hub(split):
    """WinoGrande from the hub (``allenai/winogrande``, config ``winogrande_<size>``; the
    label is the row's ``answer``, "" in test)."""
    size = winogrande_file(split)[len("train_"):] if split.startswith("train") else "xl"
    hub_split = "train" if split.startswith("train") else split
    return _hub("allenai/winogrande", f"winogrande_{size}", hub_split, winogrande_example,
                lambda row: None)
