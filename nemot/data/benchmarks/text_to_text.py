"""GLUE and SuperGLUE in T5's text-to-text form (Raffel et al. 2020, appendix D): the data
of a T5 backbone (:class:`nemot.hosts.t5.ModulatedT5`, with any ``[[model.modulation]]``),
mixed by :mod:`nemot.data.benchmarks.mixture`; the HyperGrid reproduction trains on it.

An input is the task's prefix and its fields as ``key: value``; a target is a label
word (``"entailment"``, ``"True"``, ``"choice2"``, STS-B's score rounded to 0.2 as
``"3.8"``, a ReCoRD entity). Field order and label words follow T5's GLUE/SuperGLUE
preprocessing: fields sorted by name unless T5 fixes an order (MultiRC: question,
answer, paragraph, without the HTML markup; WiC: sentence1, sentence2, word),
label words in TFDS's class order. SuperGLUE comes from the rows of
:mod:`nemot.data.benchmarks.superglue`; COPA and ReCoRD rows (one per option there) are joined
back into one example per question, as T5 has them (ReCoRD: the entity list in the
input, one training example per gold answer). WSC is one deviation: T5 marks the two
spans inside the text (``* noun *``, ``# pronoun #``), which needs the span indices
the shared reader does not keep, so here the spans are fields of their own
(``wsc span1_text: ... span2_text: ... text: ...``, target False/True).

Evaluation scores each candidate target and takes the best (rank classification):
the same answer as greedy decoding whenever that decodes a valid label, and never
an invalid one (T5 counted those as wrong). :func:`row_probabilities` turns the
candidate probabilities into the per-row probabilities
:func:`nemot.evaluation.benchmarks.score_superglue` reads.

Example:
    >>> ex = glue_example(GlueExample("RTE", {"sentence1": "A.", "sentence2": "B."}, 0, "", 1))
    >>> ex.inputs, ex.targets, ex.candidates
    ('rte sentence1: A. sentence2: B.', ('entailment',), ('entailment', 'not_entailment'))
"""

import dataclasses
import re

import numpy as np

from nemot.data.benchmarks import glue, superglue
from nemot.data.benchmarks.superglue import CB_LABELS, group_indices

GLUE_PREFIX = {"CoLA": "cola", "SST-2": "sst2", "MRPC": "mrpc", "STS-B": "stsb", "QQP": "qqp",
               "MNLI": "mnli", "MNLI-mm": "mnli", "QNLI": "qnli", "RTE": "rte", "WNLI": "wnli"}
GLUE_WORDS = {"CoLA": ("unacceptable", "acceptable"), "SST-2": ("negative", "positive"),
              "MRPC": ("not_equivalent", "equivalent"), "QQP": ("not_duplicate", "duplicate"),
              "MNLI": ("entailment", "neutral", "contradiction"),
              "MNLI-mm": ("entailment", "neutral", "contradiction"),
              "QNLI": ("entailment", "not_entailment"), "RTE": ("entailment", "not_entailment"),
              "WNLI": ("not_entailment", "entailment")}
STSB_CANDIDATES = tuple(f"{k / 5:.1f}" for k in range(26))  # 0.0, 0.2, ..., 5.0
FALSE_TRUE = ("False", "True")

# Task keys: the benchmark and its task (the two RTE sets are different tasks).
GLUE_TASKS = tuple(f"glue/{t}" for t in glue.TASKS)
SUPERGLUE_TASKS = tuple(f"superglue/{t}" for t in superglue.TASKS)
TASKS = GLUE_TASKS + SUPERGLUE_TASKS


@dataclasses.dataclass(frozen=True)
class Example:
    """One text-to-text example.

    Attributes:
        task: the task key (``"glue/RTE"``, ``"superglue/ReCoRD"``...).
        inputs: the input text.
        targets: the training targets (one training sequence each).
        candidates: the targets scored at evaluation.
        label: GLUE: the gold class index (a float for STS-B); SuperGLUE: None (its
            rows carry the labels).
        rows: SuperGLUE: the indices of the reader's rows this example stands for.
        readout: how candidate probabilities become row probabilities: ``"positive"``
            (the row's p = that of candidate 1), ``"distribution"`` (the row gets the
            whole vector: CB) or ``"options"`` (row ``rows[j]`` gets candidate j).
    """

    task: str
    inputs: str
    targets: tuple
    candidates: tuple
    label: object = None
    rows: tuple = ()
    readout: str = "positive"


def fields_text(prefix, fields):
    """``"prefix key1: value1 key2: value2"`` in the given order."""
    return " ".join([prefix] + [f"{key}: {value}" for key, value in fields])


def stsb_target(score):
    """T5's STS-B target: the score rounded to the nearest 0.2, one decimal."""
    return f"{round(score * 5) / 5:.1f}"


def glue_example(example):
    """The text-to-text form of a :class:`nemot.data.benchmarks.glue.GlueExample`."""
    task = example.task
    if task == "STS-B":
        fields = sorted(example.fields.items())
        return Example("glue/STS-B", fields_text("stsb", fields), (stsb_target(example.label),),
                       STSB_CANDIDATES, example.label)
    words = GLUE_WORDS[task]
    fields = sorted(example.fields.items())
    key = "glue/MNLI" if task == "MNLI-mm" else f"glue/{task}"
    return Example(key, fields_text(GLUE_PREFIX[task], fields), (words[example.label],), words,
                   example.label)


def multirc_paragraph(text):
    """MultiRC's paragraph without its HTML markup (``<br>`` and ``<b>``), as T5."""
    return re.sub(r"</?b>", "", text.replace("<br>", " "))


def record_passage(text):
    """ReCoRD's passage with its ``@highlight`` lines joined as sentences, as T5."""
    text = re.sub(r"([.?!\"'])\n@highlight\n", r"\1 ", text)
    return text.replace("\n@highlight\n", ". ")


def _row(task, i, row):
    """One example per row of the binary (and CB) tasks."""
    a, b = row.text_a, row.text_b
    if task == "BoolQ":
        return Example("superglue/BoolQ", fields_text("boolq", [("passage", a[0]),
                                                                ("question", b[0])]),
                       (FALSE_TRUE[row.label],), FALSE_TRUE, rows=(i,))
    if task == "CB":
        return Example("superglue/CB", fields_text("cb", [("hypothesis", b[0]), ("premise", a[0])]),
                       (CB_LABELS[row.label],), CB_LABELS, rows=(i,), readout="distribution")
    if task == "RTE":
        words = ("not_entailment", "entailment")  # row label 1 = entailment
        return Example("superglue/RTE", fields_text("rte", [("hypothesis", b[0]), ("premise", a[0])]),
                       (words[row.label],), words, rows=(i,))
    if task == "WiC":
        fields = [("sentence1", a[0]), ("sentence2", a[1]), ("word", b[0])]
        return Example("superglue/WiC", fields_text("wic", fields), (FALSE_TRUE[row.label],),
                       FALSE_TRUE, rows=(i,))
    if task == "WSC":
        fields = [("span1_text", b[0]), ("span2_text", b[1]), ("text", a[0])]
        return Example("superglue/WSC", fields_text("wsc", fields), (FALSE_TRUE[row.label],),
                       FALSE_TRUE, rows=(i,))
    fields = [("question", b[0]), ("answer", b[1]), ("paragraph", multirc_paragraph(a[0]))]
    return Example("superglue/MultiRC", fields_text("multirc", fields), (FALSE_TRUE[row.label],),
                   FALSE_TRUE, rows=(i,))


def _group(task, rows, idx):
    """One example per question of COPA and ReCoRD (their rows are its options)."""
    first = rows[idx[0]]
    if task == "COPA":
        choices = [rows[i].text_b[1] for i in idx]
        fields = [("choice1", choices[0]), ("choice2", choices[1]), ("premise", first.text_a[0]),
                  ("question", first.text_b[0])]
        words = ("choice1", "choice2")
        right = next(j for j, i in enumerate(idx) if rows[i].label == 1)
        return Example("superglue/COPA", fields_text("copa", fields), (words[right],), words,
                       rows=tuple(idx), readout="options")
    entities = [rows[i].option for i in idx]
    inputs = (f"record query: {first.text_b[0]} entities: {', '.join(entities)} "
              f"passage: {record_passage(first.text_a[0])}")
    return Example("superglue/ReCoRD", inputs, tuple(dict.fromkeys(first.answers)),
                   tuple(entities), rows=tuple(idx), readout="options")


def superglue_examples(data):
    """The text-to-text examples of a :class:`nemot.data.benchmarks.superglue.TaskData`."""
    if data.task in ("COPA", "ReCoRD"):
        return [_group(data.task, data.rows, idx) for idx in group_indices(data.rows).values()]
    return [_row(data.task, i, row) for i, row in enumerate(data.rows)]


def row_probabilities(task, examples, probabilities, num_rows):
    """Per-row probabilities for :func:`nemot.evaluation.benchmarks.score_superglue`.

    Args:
        task: the SuperGLUE task name (``"CB"``...).
        examples: the task's examples, in order.
        probabilities: per example, the softmax over its candidates.
        num_rows: rows of the task's split.
    """
    out = np.zeros((num_rows, len(CB_LABELS)) if task == "CB" else num_rows)
    for example, p in zip(examples, probabilities):
        p = np.asarray(p, np.float64)
        if example.readout == "positive":
            out[example.rows[0]] = p[1]
        elif example.readout == "distribution":
            out[example.rows[0]] = p
        else:
            out[list(example.rows)] = p
    return out
