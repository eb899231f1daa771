"""PIQA, Social IQa and WinoGrande: JSON lines, labels in the line or in a ``.lst`` file.

- PIQA (Bisk et al., 2020): ``{train,valid}.jsonl`` with ``goal``, ``sol1``, ``sol2``
  and ``{split}-labels.lst`` (0/1); ``tests.jsonl`` is unlabelled.
  Format ``<q> goal (1) sol1 (2) sol2 <sep>`` -> ``(k)``.
- SIQA (Sap et al., 2019): ``{train,dev}.jsonl`` with ``context``, ``question``,
  ``answerA``-``answerC`` and ``{split}-labels.lst`` (1-3).
  Format ``<p1> context <q> question (1) (2) (3) <sep>`` -> ``(k)``.
- WinoGrande (Sakaguchi et al., 2020): ``train_{xs,s,m,l,xl}.jsonl``, ``dev.jsonl``,
  ``test.jsonl`` with ``sentence``, ``option1``, ``option2``, ``answer`` ("1"/"2",
  empty in test). Format ``<q> sentence (1) o1 (2) o2 <sep>`` -> ``(k)``.
"""

from nemot.data.readers import common


def labelled_jsonl(data_dir, split, patterns, to_example, labels=None):
    """Examples of a JSON-lines file, with labels from ``labels=(pattern, base, n_options)``."""
    (path,) = common.find_files(data_dir, patterns, split)
    records = list(common.iter_jsonl(path))
    label_list = [None] * len(records)
    if labels is not None:
        name, base, n_options = labels
        label_list = common.read_label_file(path.parent / name, len(records), base, n_options)
    for (line_no, record), label in zip(records, label_list):
        yield to_example(record, label, path, line_no)


def piqa_example(record, label, path, where):
    options = [common.get(record, key, path, where) for key in ("sol1", "sol2")]
    return common.multiple_choice("piqa", record.get("id", where),
                                  common.get(record, "goal", path, where), options, label)


def siqa_example(record, label, path, where):
    options = [common.get(record, f"answer{k}", path, where) for k in "ABC"]
    return common.multiple_choice("siqa", where, common.get(record, "question", path, where),
                                  options, label, passage=common.get(record, "context", path, where))


def winogrande_example(record, label, path, where):
    options = [common.get(record, key, path, where) for key in ("option1", "option2")]
    answer = record.get("answer", "")
    label = None if answer == "" else common.letter_label(answer, ("1", "2"), path, where, "answer")
    return common.multiple_choice("winogrande", record.get("qID", where),
                                  common.get(record, "sentence", path, where), options, label)


def read_piqa(data_dir, split):
    """PIQA ``train``/``valid`` (labelled) or ``test`` (unlabelled) from the raw directory."""
    if split == "test":
        return labelled_jsonl(data_dir, split, ["tests.jsonl"], piqa_example)
    return labelled_jsonl(data_dir, split, [f"{split}.jsonl"], piqa_example,
                          labels=(f"{split}-labels.lst", 0, 2))


def read_siqa(data_dir, split):
    """Social IQa ``train``/``dev`` from the raw directory (``socialiqa-train-dev``)."""
    return labelled_jsonl(data_dir, split, [f"{split}.jsonl", f"socialiqa-train-dev/{split}.jsonl"],
                          siqa_example, labels=(f"{split}-labels.lst", 1, 3))


def read_winogrande(data_dir, split, size="xl"):
    """WinoGrande ``train`` (size ``xs``..``xl``), ``dev`` or ``test`` from the raw directory."""
    name = f"train_{size}" if split == "train" else split
    return labelled_jsonl(data_dir, split, [f"{name}.jsonl", f"winogrande_1.1/{name}.jsonl"],
                          winogrande_example)


def _hub(name, config, split, to_example, label_of):
    for i, row in enumerate(common.hub_rows(name, config, {"dev": "validation", "valid": "validation"}
                                            .get(split, split))):
        yield to_example(row, label_of(row), f"hub:{name}", i)


def read_piqa_hub(split):
    """PIQA from the Hugging Face hub (``ybisk/piqa``; needs the network, untested offline)."""
    return _hub("ybisk/piqa", None, split, piqa_example,
                lambda row: None if row["label"] < 0 else row["label"])


def read_siqa_hub(split):
    """Social IQa from the hub (``allenai/social_i_qa``; needs the network, untested offline)."""
    return _hub("allenai/social_i_qa", None, split, siqa_example, lambda row: int(row["label"]) - 1)


def read_winogrande_hub(split, size="xl"):
    """WinoGrande from the hub (``allenai/winogrande``; needs the network, untested offline)."""
    return _hub("allenai/winogrande", f"winogrande_{size}", split, winogrande_example,
                lambda row: None)
