"""SuperGLUE readers: official jsonl files to ``[CLS] A [SEP] B [SEP]`` rows (NGT's
layout; HyperGrid's text-to-text form is built from the same rows).

Each task is one small declarative reader: a function from
one jsonl record to the rows it yields. Multiple-choice tasks (COPA, MultiRC,
ReCoRD) give one row per option with a 0/1 target; the rows of a question
share a ``group`` and the highest-scoring row wins. ReCoRD rows keep their
candidate string (``option``), so no word pieces are decoded back to text.
A text that is a tuple of pieces is joined with real ``[SEP]`` ids (the
original placed literal " [SEP] " in its strings).

Files: ``<dir>/<Task>/{train,val}.jsonl`` as in the official SuperGLUE zip;
:func:`hub_records` fetches the same records from the Hugging Face hub (needs
the network and the ``datasets`` package; not tested offline) and
:func:`tfds_records` reads them from a prepared TensorFlow Datasets ``super_glue``
(``load_task(..., source="tfds")``). Every malformed record is a
:class:`nemot.data.DataError` naming the file (or dataset), the line (or row), the field
and what was expected.

Example:
>>> data = read_task("RTE", "SuperGLUE/RTE/val.jsonl")        # doctest: +SKIP
>>> data.rows[0].text_a, data.rows[0].label                     # doctest: +SKIP
(('Dana Reeve, the widow of ...',), 0)
"""

import dataclasses
from pathlib import Path

import numpy as np

from nemot.data.benchmarks.tfds_rows import tfds_rows
from nemot.data.benchmarks.wordpiece import InputPacker
from nemot.data.raw import DataError, hub_rows, iter_jsonl

TASKS = ("BoolQ", "CB", "COPA", "MultiRC", "ReCoRD", "RTE", "WiC", "WSC")
CB_LABELS = ("contradiction", "neutral", "entailment")  # the original's one-hot order


@dataclasses.dataclass(frozen=True)
class PairRow:
    """One model input and its target.

    Attributes:
        text_a: pieces of segment A, joined by [SEP]; truncated from its end.
        text_b: pieces of segment B, joined by [SEP]; never truncated.
        label: the target: 0/1, or the class index (CB).
        group: the question this row belongs to (rows of one group compete).
        option: what this row scores: the choice index, answer idx or ReCoRD candidate.
        answers: gold answer strings of the group (ReCoRD only).
    """

    text_a: tuple
    text_b: tuple
    label: int
    group: str
    option: str = ""
    answers: tuple = ()


@dataclasses.dataclass(frozen=True)
class TaskData:
    """The rows of one task split and where they came from."""

    task: str
    source: str
    rows: list


class _Record:
    """A jsonl record with typed field access that names file, line and field on error."""

    def __init__(self, data, source, line):
        self.data, self.source, self.line = data, source, line

    def error(self, field, expected, value):
        return DataError(self.source, self.line, field, expected, got=value)

    def get(self, field, kind, node=None, where=None):
        """``field`` of the record (or of ``node``, a sub-object at path ``where``), checked
        against ``kind``."""
        node = self.data if node is None else node
        path = field if where is None else f"{where}.{field}"
        if not isinstance(node, dict) or field not in node:
            kind_name = kind.__name__ if isinstance(kind, type) else kind
            raise self.error(path, f"a {kind_name}", "<missing>")
        value = node[field]
        if isinstance(kind, tuple):  # a set of allowed values
            if value not in kind:
                raise self.error(path, f"one of {list(kind)}", value)
        elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(path, f"a {kind.__name__}", value)
        return value


def _one(r, text_a, text_b, label):
    """The one row of a single-answer task: its group is the record's ``idx``."""
    return [PairRow(text_a, text_b, label, str(r.get("idx", int)))]


def _boolq(r):
    label = r.get("label", bool)
    return _one(r, (r.get("passage", str),), (r.get("question", str),), int(label))


def _cb(r):
    label = CB_LABELS.index(r.get("label", CB_LABELS))
    return _one(r, (r.get("premise", str),), (r.get("hypothesis", str),), label)


def _rte(r):
    label = int(r.get("label", ("entailment", "not_entailment")) == "entailment")
    return _one(r, (r.get("premise", str),), (r.get("hypothesis", str),), label)


def _wic(r):
    # Span offsets (start1, end1, ...) are ignored, as in the original.
    text_a = (r.get("sentence1", str), r.get("sentence2", str))
    return _one(r, text_a, (r.get("word", str),), int(r.get("label", bool)))


def _wsc(r):
    target = r.get("target", dict)
    text_b = (r.get("span1_text", str, target, "target"),
              r.get("span2_text", str, target, "target"))
    return _one(r, (r.get("text", str),), text_b, int(r.get("label", bool)))


def _copa(r):
    premise, question = r.get("premise", str), r.get("question", ("cause", "effect"))
    label, group = r.get("label", (0, 1)), str(r.get("idx", int))
    return [PairRow((premise,), (question, r.get(f"choice{j + 1}", str)), int(label == j),
                    group, str(j)) for j in range(2)]


def _multirc(r):
    passage = r.get("passage", dict)
    text = r.get("text", str, passage, "passage")
    pidx = r.get("idx", int)
    rows = []
    for qi, q in enumerate(r.get("questions", list, passage, "passage")):
        where = f"passage.questions[{qi}]"
        question, group = r.get("question", str, q, where), f"{pidx}-{r.get('idx', int, q, where)}"
        for ai, a in enumerate(r.get("answers", list, q, where)):
            awhere = f"{where}.answers[{ai}]"
            rows.append(
                PairRow(
                    (text,),
                    (question, r.get("text", str, a, awhere)),
                    r.get("label", (0, 1), a, awhere),
                    group,
                    str(r.get("idx", int, a, awhere)),
                )
            )
    return rows


def _record(r):
    passage = r.get("passage", dict)
    text = r.get("text", str, passage, "passage")
    candidates = []
    for ei, e in enumerate(r.get("entities", list, passage, "passage")):
        where = f"passage.entities[{ei}]"
        start, end = r.get("start", int, e, where), r.get("end", int, e, where)
        if not 0 <= start <= end < len(text):
            raise r.error(where, f"0 <= start <= end < {len(text)} (end is inclusive)",
                          (start, end))
        candidate = text[start : end + 1]
        if candidate not in candidates:
            candidates.append(candidate)
    rows = []
    for qi, qa in enumerate(r.get("qas", list)):
        where = f"qas[{qi}]"
        query, group = r.get("query", str, qa, where), str(r.get("idx", int, qa, where))
        answers = tuple(r.get("text", str, a, f"{where}.answers[{ai}]")
                        for ai, a in enumerate(r.get("answers", list, qa, where)))
        if not answers:
            raise r.error(f"{where}.answers", "at least one gold answer", [])
        rows.extend(PairRow((text,), (query, c), int(c in answers), group, c, answers)
                    for c in candidates)
    return rows


READERS = {
    "BoolQ": _boolq,
    "CB": _cb,
    "COPA": _copa,
    "MultiRC": _multirc,
    "ReCoRD": _record,
    "RTE": _rte,
    "WiC": _wic,
    "WSC": _wsc,
}


def _check_task(task):
    if task not in READERS:
        raise ValueError(f"task {task!r}: expected one of {', '.join(TASKS)}")


def records_to_rows(task, records, source):
    """Rows of ``task`` from an iterable of (line number, record dict)."""
    _check_task(task)
    rows = []
    for line, record in records:
        rows.extend(READERS[task](_Record(record, source, line)))
    if not rows:
        raise DataError(source, None, "(file)", "at least one jsonl record", got="none")
    return TaskData(task, str(source), rows)


def read_task(task, path):
    """Read one official SuperGLUE jsonl file (train or val: labels are required)."""
    _check_task(task)
    return records_to_rows(task, iter_jsonl(Path(path)), path)


def task_path(data_dir, task, split):
    """``<data_dir>/<Task>/<split>.jsonl``, the layout of the official zip."""
    _check_task(task)
    return Path(data_dir) / task / f"{split}.jsonl"


# ---------------------------------------------------------------- hub (online)

_HUB_CONFIG = {t: t.lower() for t in TASKS} | {"WSC": "wsc.fixed"}


def hub_records(task, split):
    """(index, record) pairs of ``task`` from the Hugging Face hub, in the official jsonl layout.

    Needs the network and ``pip install datasets``, so the offline tests only
    cover :func:`hub_to_official`. ``split`` is ``train`` or ``val``.
    """
    _check_task(task)
    hub_split = {"val": "validation"}.get(split, split)
    return hub_to_official(task, hub_rows("aps/super_glue", _HUB_CONFIG[task], hub_split))


# Hub rows that differ from the official records only field by field.
_HUB_CONVERT = {
    "BoolQ": lambda x: {**x, "label": bool(x["label"])},
    # Hub class labels: CB 0 entailment, 1 contradiction, 2 neutral; RTE 0 entailment, 1 not.
    "CB": lambda x: {**x, "label": ("entailment", "contradiction", "neutral")[x["label"]]},
    "RTE": lambda x: {**x, "label": ("entailment", "not_entailment")[x["label"]]},
    "WiC": lambda x: {**x, "label": bool(x["label"])},
    "WSC": lambda x: {
        "text": x["text"],
        "target": {"span1_text": x["span1_text"], "span2_text": x["span2_text"]},
        "idx": x["idx"],
        "label": bool(x["label"]),
    },
    "COPA": dict,
}


def hub_to_official(task, hub_rows):
    """Hub rows (``super_glue`` schema) to (index, official record) pairs for
    :func:`records_to_rows`.

    The hub flattens MultiRC to one row per answer and ReCoRD to one row per
    query, and stores labels as integers; this rebuilds the official nesting.
    """
    _check_task(task)
    if task == "MultiRC":
        records = _hub_multirc(hub_rows)
    elif task == "ReCoRD":
        records = _hub_record(hub_rows)
    else:
        records = (_HUB_CONVERT[task](dict(x)) for x in hub_rows)
    return enumerate(records, start=1)


def _hub_multirc(data):
    passages = {}
    for x in data:
        p = passages.setdefault(x["idx"]["paragraph"], {"text": x["paragraph"], "questions": {}})
        q = p["questions"].setdefault(x["idx"]["question"],
                                      {"question": x["question"], "answers": []})
        q["answers"].append({"text": x["answer"], "idx": x["idx"]["answer"], "label": x["label"]})
    for pidx, p in passages.items():
        questions = [{**q, "idx": qidx} for qidx, q in p["questions"].items()]
        yield {"idx": pidx, "passage": {"text": p["text"], "questions": questions}}


def _hub_record(data):
    passages = {}
    for x in data:
        spans = x["entity_spans"]
        # Hub spans end exclusively; the official layout is inclusive.
        entities = [{"start": s, "end": e - 1} for s, e in zip(spans["start"], spans["end"])]
        p = passages.setdefault(x["idx"]["passage"],
                                {"text": x["passage"], "entities": entities, "qas": []})
        p["qas"].append({"query": x["query"], "idx": x["idx"]["query"],
                         "answers": [{"text": a} for a in x["answers"]]})
    for pidx, p in passages.items():
        yield {"idx": pidx, "passage": {"text": p["text"], "entities": p["entities"]},
               "qas": p["qas"]}


# ---------------------------------------------------------------- TFDS

TFDS_VERSION = "1.0.2"  # super_glue/<config> of tensorflow-datasets 4.x
# The official files' WSC spans: TFDS's wsc.fixed edits some of them.
_TFDS_CONFIG = {t: t.lower() for t in TASKS}
# The features each task's rows are built from (TFDS flattens MultiRC to one row per answer
# and ReCoRD to one row per query; WSC's spans stand beside the text, not in `target`).
_TFDS_FEATURES = {
    "BoolQ": ("question", "passage", "idx", "label"),
    "CB": ("premise", "hypothesis", "idx", "label"),
    "COPA": ("premise", "choice1", "choice2", "question", "idx", "label"),
    "MultiRC": ("paragraph", "question", "answer", "label", "idx.paragraph", "idx.question",
                "idx.answer"),
    "ReCoRD": ("passage", "query", "entities", "answers", "idx.passage", "idx.query"),
    "RTE": ("premise", "hypothesis", "idx", "label"),
    "WiC": ("word", "sentence1", "sentence2", "idx", "label"),
    "WSC": ("text", "span1_text", "span2_text", "idx", "label"),
}
# TFDS's class names (the hub's too): the positions _HUB_CONVERT decodes; ReCoRD has no label.
_TFDS_LABELS = {"CB": ("entailment", "contradiction", "neutral"), "COPA": ("choice1", "choice2"),
                "RTE": ("entailment", "not_entailment")}


def _tfds_name(task):
    return f"super_glue/{_TFDS_CONFIG[task]}:{TFDS_VERSION}"


def _tfds_split(split):
    return {"val": "validation"}.get(split, split)


def _tfds_source(task, split, data_dir):
    """How errors name a TFDS split: dataset, split and data directory."""
    return f"TFDS {_tfds_name(task)} [{_tfds_split(split)}] in {data_dir}"


def _feature_names(features, prefix=""):
    """Every feature's name, nested ones as ``outer.inner``."""
    import tensorflow_datasets as tfds

    names = []
    for name, feature in features.items():
        names.append(prefix + name)
        if isinstance(feature, tfds.features.FeaturesDict):
            names.extend(_feature_names(feature, f"{prefix}{name}."))
    return names


def _tfds_record_spans(row, source, number):
    """A TFDS ReCoRD row with the hub's ``entity_spans``: TFDS keeps each entity's text
    only (sorted, once), so a span is the text's first occurrence in the passage."""
    starts = [row["passage"].find(entity) for entity in row["entities"]]
    if -1 in starts:
        entity = row["entities"][starts.index(-1)]
        raise DataError(source, f"row {number}", "entities", "strings of the passage", got=entity)
    ends = [start + len(entity) for start, entity in zip(starts, row["entities"])]
    return {**row, "entity_spans": {"text": row["entities"], "start": starts, "end": ends}}


def tfds_records(task, split, data_dir):
    """(index, record) pairs of ``task`` from TFDS ``super_glue/<config>:1.0.2`` prepared in
    ``data_dir``, in the official jsonl layout (``split``: ``train`` or ``val``).

    Rows are put back in the files' order (TFDS shuffles them when it prepares a split)
    and rebuilt as :func:`hub_to_official` rebuilds the hub's. A missing feature, other
    label classes and an unlabelled row (-1, TFDS's test rows) are
    :class:`nemot.data.DataError` s. ReCoRD: TFDS keeps each entity and gold answer once,
    sorted, so a question's candidates come in that order and its golds once each.
    """
    _check_task(task)
    features, rows = tfds_rows(_tfds_name(task), data_dir, _tfds_split(split))
    source = _tfds_source(task, split, data_dir)
    names = _feature_names(features)
    missing = [name for name in _TFDS_FEATURES[task] if name not in names]
    if missing:
        raise DataError(source, None, missing[0],
                        f"the features {list(_TFDS_FEATURES[task])} of {task}", got=names)
    if task != "ReCoRD":
        expected = list(_TFDS_LABELS.get(task, ("False", "True")))
        if list(features["label"].names) != expected:
            raise DataError(source, None, "label", f"the class names {expected}",
                            got=list(features["label"].names))
    keys = {"MultiRC": ("paragraph", "question", "answer"), "ReCoRD": ("passage", "query")}
    rows = sorted(rows, key=lambda r: tuple(r["idx"][k] for k in keys[task])
                  if task in keys else r["idx"])
    for number, row in enumerate(rows, start=1):
        if row.get("label") == -1:
            raise DataError(source, f"row {number}", "label",
                            "a labelled row (TFDS marks the unlabelled test rows -1)", got=-1)
    if task == "ReCoRD":
        rows = [_tfds_record_spans(row, source, n) for n, row in enumerate(rows, start=1)]
    return hub_to_official(task, rows)


# Where SuperGLUE is read from: the official jsonl files, a prepared TensorFlow Datasets
# directory, or the Hugging Face hub (also "files" without a directory).
SOURCES = ("files", "tfds", "hub")


def load_task(task, split, data_dir=None, source="files"):
    """``task``'s ``split`` (``train`` or ``val``) as :class:`TaskData`.

    ``source="files"``: ``read_task`` on ``<data_dir>/<Task>/<split>.jsonl``, or the hub
    when ``data_dir`` is None (online); ``source="tfds"``: :func:`tfds_records` from the
    TFDS data directory ``data_dir``; ``source="hub"``: the Hugging Face hub (online).
    """
    if source == "tfds":
        return records_to_rows(task, tfds_records(task, split, data_dir),
                               _tfds_source(task, split, data_dir))
    if source not in SOURCES:
        raise ValueError(f"SuperGLUE source {source!r}: expected one of {SOURCES}")
    if data_dir is None or source == "hub":
        return records_to_rows(task, hub_records(task, split), f"hub:super_glue/{task}/{split}")
    return read_task(task, task_path(data_dir, task, split))


# ---------------------------------------------------------------- predictions


def group_indices(rows):
    """``{group: [row index, ...]}`` in first-seen order: the options of each question."""
    groups = {}
    for i, row in enumerate(rows):
        groups.setdefault(row.group, []).append(i)
    return groups


def _label_value(task, label):
    """A 0/1 (or CB class) label as the official files write it."""
    if task == "CB":
        return CB_LABELS[label]
    if task == "RTE":
        return "entailment" if label else "not_entailment"
    return bool(label)


def prediction_records(task, rows, probabilities):
    """Predictions in the layout of the official jsonl labels, one record per example.

    Binary tasks: sigmoid > 0.5; CB: argmax; COPA and ReCoRD: the best option
    of each group (ReCoRD's label is the candidate string); MultiRC: one
    label per answer, nested as in the official files.

    Args:
        task: the SuperGLUE task.
        rows: the rows that were scored, in order.
        probabilities: [len(rows), units] model outputs.
    """
    _check_task(task)
    p = np.asarray(probabilities, np.float64)
    if len(p) != len(rows):
        raise ValueError(f"{len(rows)} rows but {len(p)} predictions: expected one per row")
    if task == "CB":
        return [{"idx": int(r.group), "label": CB_LABELS[int(np.argmax(q))]}
                for r, q in zip(rows, p)]
    p = p.reshape(len(rows))
    if task in ("BoolQ", "RTE", "WiC", "WSC"):
        return [{"idx": int(r.group), "label": _label_value(task, q > 0.5)}
                for r, q in zip(rows, p)]
    groups = group_indices(rows)
    if task in ("COPA", "ReCoRD"):
        best = {g: rows[idx[int(np.argmax(p[idx]))]] for g, idx in groups.items()}
        cast = int if task == "COPA" else str
        return [{"idx": int(g), "label": cast(r.option)} for g, r in best.items()]
    # MultiRC: group "<passage idx>-<question idx>", option = answer idx.
    passages = {}
    for group, idx in groups.items():
        pidx, qidx = (int(x) for x in group.split("-"))
        answers = [{"idx": int(rows[i].option), "label": int(p[i] > 0.5)} for i in idx]
        passages.setdefault(pidx, []).append({"idx": qidx, "answers": answers})
    return [{"idx": pidx, "passage": {"questions": qs}} for pidx, qs in passages.items()]


# ------------------------------------------------------------------- encoding


class PairEncoder:
    """Packs rows into ``[CLS] A [SEP] B [SEP]`` of exactly ``sequence_length`` ids.

    As the original's ``batch_encode_plus(truncation="only_first")``: only A is
    cut, from its end; B is kept whole; segment ids are 0 for ``[CLS] A [SEP]``
    and 1 for ``B [SEP]`` (a [SEP] inside B does not change them); padding with
    ``[PAD]`` to the right. With ``num_aux_tokens`` the given auxiliary token
    ids come first (the gating block's context) and the text gets that many
    fewer positions. The packing is :class:`nemot.data.benchmarks.wordpiece.InputPacker`'s.

    Args:
        tokenizer: a ``keras_hub.models.BertTokenizer`` (or anything with
            ``__call__(list[str])`` giving ragged ids and ``token_to_id``).
        sequence_length: total ids per row (paper: 512).
        aux_token_ids: ids placed before [CLS]; empty by default (paper).

    Example:
    >>> encoder = PairEncoder(keras_hub.models.BertTokenizer(vocabulary="vocab.txt"), 16)  # doctest: +SKIP
    >>> encoder.encode(rows)["token_ids"].shape                                          # doctest: +SKIP
    (len(rows), 16)
    """

    def __init__(self, tokenizer, sequence_length=512, aux_token_ids=()):
        self.tokenizer = tokenizer
        self.sequence_length = sequence_length
        self.sep_id = tokenizer.token_to_id("[SEP]")
        self.packer = InputPacker(tokenizer, sequence_length, truncate="only_first",
                                  prefix_ids=aux_token_ids)
        self._cache = {}

    def prepare(self, rows):
        """Tokenize every distinct string of ``rows`` (once; later calls reuse the cache)."""
        texts = {p for row in rows for p in row.text_a + row.text_b}
        new = sorted(t for t in texts if t not in self._cache)
        if new:
            ids_per_text = self.tokenizer(new)
            # KerasHub gives a list of lists for a list input; a tf.RaggedTensor in a tf.data graph.
            if hasattr(ids_per_text, "to_list"):
                ids_per_text = ids_per_text.to_list()
            for text, ids in zip(new, ids_per_text):
                self._cache[text] = list(ids)
        return self._cache

    def _join(self, pieces, cache):
        out = []
        for i, piece in enumerate(pieces):
            if i:
                out.append(self.sep_id)
            out.extend(cache[piece])
        return out

    def encode(self, rows):
        """Numpy int32 arrays ``token_ids``, ``segment_ids``, ``padding_mask`` of [len(rows), sequence_length]."""
        cache = self.prepare(rows)
        return self.packer([[self._join(row.text_a, cache) for row in rows],
                            [self._join(row.text_b, cache) for row in rows]],
                           row_names=[f"group {row.group}" for row in rows])
