"""The thesis' own numbers (docs/spec.md section 8), as data, printed beside ours in reports.

Values are exactly as printed in the thesis: accuracy in percent (60.02), F1 and
ROUGE-L as fractions (0.6729), perplexity as is. Dataset keys are the names
used by ``nemot.data`` and the reports: ``squad_v2``, ``race``, ``boolq``,
``narrativeqa``, ``arc``, ``obqa``, ``mctest``, the out-of-domain sets of Table
3.8 (``quoref``, ``drop``, ``boolq_cs``, ``commonsenseqa``, ...); LM sets
``lambada``, ``wikitext2``, ``wikitext103``, ``ptb``. Splits are ``val`` and
``test``. Subsets are ``total``, RACE ``middle``/``high`` (thesis M/H) and ARC
``challenge``/``easy`` (thesis Hard/Easy).

Each row names the metric *implementation* that produced it: the thesis' ROUGE-L
rows (NarrativeQA, DROP) are ``rouge_l_thesis``, the ``rouge`` package the
original code used, not nemot's default ``rouge_l`` (:data:`THESIS_IMPLEMENTATIONS`).

Example:

>>> [r.model for r in results_for("race", "val", table="3.4")]
['GPT-2 Medium♣', 'NeMoT♣', 'GPT-2 Medium♠', 'NeMoT♠']
>>> lm_perplexity("NeMoT_200", window=32)["wikitext2"]
30.81
"""

import dataclasses


@dataclasses.dataclass(frozen=True)
class ThesisResult:
    """One cell group of a thesis table: a model's scores on one dataset split.

    Attributes:
        table: thesis table number (``"3.4"`` single-dataset fine-tuning,
            ``"3.7"`` general training, in-domain, ``"3.8"`` out-of-domain).
        model: row label as in the thesis (♣ lowest validation loss, ♠ best
            validation metric).
        dataset, split: e.g. ``"race"``, ``"test"``.
        metric: ``"accuracy"``, ``"f1"``, ``"rouge_l_thesis"`` or ``"drop_f1"``
            (a name of ``nemot.evaluation.metrics.METRICS``).
        scores: subset -> value as printed (``"total"`` always present).
        epoch: the ``(ep#)`` the thesis gives for the row, else ``None``.
    """

    table: str
    model: str
    dataset: str
    split: str
    metric: str
    scores: dict
    epoch: object = None


def _rows(table, model, cells):
    return [ThesisResult(table, model, *cell) for cell in cells]


# Metrics whose thesis numbers came from another implementation than nemot's
# default: the original code scored ROUGE-L with the ``rouge`` package (1.0.1).
# The outside rows the thesis printed beside its own (UnifiedQA, SOTA) stay with
# them in that column.
THESIS_IMPLEMENTATIONS = {"rouge_l": "rouge_l_thesis"}


# Table 3.4: single-dataset fine-tuning, NeMoT vs GPT-2 Medium (♣ and ♠ rows).
TABLE_3_4 = (
    _rows("3.4", "GPT-2 Medium♣", [
        ("squad_v2", "val", "f1", {"total": 0.6608}, 7),
        ("race", "val", "accuracy", {"total": 63.49, "middle": 65.95, "high": 62.47}, 5),
        ("race", "test", "accuracy", {"total": 62.26, "middle": 65.04, "high": 61.12}, 5),
        ("boolq", "val", "accuracy", {"total": 76.85}, 2),
        ("narrativeqa", "val", "rouge_l_thesis", {"total": 0.2498}, 3),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.2408}, 3),
    ])
    + _rows("3.4", "NeMoT♣", [
        ("squad_v2", "val", "f1", {"total": 0.5999}, 2),
        ("race", "val", "accuracy", {"total": 53.90, "middle": 56.75, "high": 52.71}, 4),
        ("race", "test", "accuracy", {"total": 51.93, "middle": 54.74, "high": 50.77}, 4),
        ("boolq", "val", "accuracy", {"total": 72.17}, 2),
        ("narrativeqa", "val", "rouge_l_thesis", {"total": 0.3809}, 2),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.3750}, 2),
    ])
    + _rows("3.4", "GPT-2 Medium♠", [
        ("squad_v2", "val", "f1", {"total": 0.6985}, 20),
        ("race", "val", "accuracy", {"total": 67.22, "middle": 69.85, "high": 66.13}, 12),
        ("race", "test", "accuracy", {"total": 64.19, "middle": 66.64, "high": 63.18}, 12),
        ("boolq", "val", "accuracy", {"total": 78.72}, 17),
        ("narrativeqa", "val", "rouge_l_thesis", {"total": 0.2498}, 3),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.2408}, 3),
    ])
    + _rows("3.4", "NeMoT♠", [
        ("squad_v2", "val", "f1", {"total": 0.6729}, 16),
        ("race", "val", "accuracy", {"total": 60.02, "middle": 64.48, "high": 58.16}, 26),
        ("race", "test", "accuracy", {"total": 57.94, "middle": 60.86, "high": 56.75}, 26),
        ("boolq", "val", "accuracy", {"total": 77.13}, 28),
        ("narrativeqa", "val", "rouge_l_thesis", {"total": 0.4147}, 1),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.4119}, 1),
    ])
    + _rows("3.4", "SOTA", [
        ("squad_v2", "test", "f1", {"total": 0.9298}),
        ("race", "test", "accuracy", {"total": 90.7}),
        ("boolq", "test", "accuracy", {"total": 92.4}),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.674}),
    ])
)

# Table 3.7: general training (400k iterations), in-domain results on the seed datasets.
TABLE_3_7 = (
    _rows("3.7", "GPT-2 Medium_general", [
        ("squad_v2", "val", "f1", {"total": 0.5405}),
        ("race", "val", "accuracy", {"total": 52.57, "middle": 55.64, "high": 51.29}),
        ("race", "test", "accuracy", {"total": 51.07, "middle": 55.92, "high": 49.09}),
        ("arc", "val", "accuracy", {"total": 36.59, "challenge": 33.78, "easy": 38.07}),
        ("arc", "test", "accuracy", {"total": 37.88, "challenge": 33.62, "easy": 39.98}),
        ("obqa", "val", "accuracy", {"total": 47.60}),
        ("obqa", "test", "accuracy", {"total": 45.60}),
        ("mctest", "val", "accuracy", {"total": 57.19}),
        ("mctest", "test", "accuracy", {"total": 57.50}),
        ("boolq", "val", "accuracy", {"total": 74.40}),
        ("narrativeqa", "val", "rouge_l_thesis", {"total": 0.2608}),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.2611}),
    ])
    + _rows("3.7", "NeMoT_general", [
        ("squad_v2", "val", "f1", {"total": 0.5272}),
        ("race", "val", "accuracy", {"total": 48.43, "middle": 51.74, "high": 47.06}),
        ("race", "test", "accuracy", {"total": 48.43, "middle": 50.97, "high": 45.54}),
        ("arc", "val", "accuracy", {"total": 35.90, "challenge": 33.78, "easy": 37.02}),
        ("arc", "test", "accuracy", {"total": 38.53, "challenge": 32.59, "easy": 41.46}),
        ("obqa", "val", "accuracy", {"total": 48.40}),
        ("obqa", "test", "accuracy", {"total": 49.80}),
        ("mctest", "val", "accuracy", {"total": 51.25}),
        ("mctest", "test", "accuracy", {"total": 56.19}),
        ("boolq", "val", "accuracy", {"total": 74.95}),
        ("narrativeqa", "val", "rouge_l_thesis", {"total": 0.2839}),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.2791}),
    ])
    + _rows("3.7", "UnifiedQA_Base", [
        ("squad_v2", "val", "f1", {"total": 0.781}),
        ("race", "test", "accuracy", {"total": 70.3}),
        ("arc", "test", "accuracy", {"challenge": 45.7, "easy": 58.5}),
        ("obqa", "test", "accuracy", {"total": 59.4}),
        ("mctest", "val", "accuracy", {"total": 86.9}),
        ("boolq", "test", "accuracy", {"total": 82.5}),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.604}),
    ])
    + _rows("3.7", "UnifiedQA_11B", [
        ("squad_v2", "val", "f1", {"total": 0.898}),
        ("race", "test", "accuracy", {"total": 88.6}),
        ("arc", "test", "accuracy", {"challenge": 77.8, "easy": 87.2}),
        ("obqa", "test", "accuracy", {"total": 86.4}),
        ("mctest", "val", "accuracy", {"total": 95.6}),
        ("boolq", "test", "accuracy", {"total": 90.3}),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.674}),
    ])
    + _rows("3.7", "SOTA", [
        ("squad_v2", "test", "f1", {"total": 0.9298}),
        ("race", "test", "accuracy", {"total": 90.7}),
        ("arc", "test", "accuracy", {"total": 86.52}),
        ("obqa", "test", "accuracy", {"total": 87.4}),
        ("mctest", "val", "accuracy", {"total": 95.6}),
        ("mctest", "test", "accuracy", {"total": 71.0}),  # the thesis' † note
        ("boolq", "test", "accuracy", {"total": 92.4}),
        ("narrativeqa", "test", "rouge_l_thesis", {"total": 0.674}),
    ])
)

# Table 3.8: general training, out-of-domain (non-seed) datasets. UnifiedQA v1's rows
# are left out: the thesis could not say whether they are validation or test numbers.
# The DROP SOTA is an F1 (the thesis' * note), the official DROP F1; DROP-CS's SOTA
# does not say its metric and is left out.
TABLE_3_8 = (
    _rows("3.8", "GPT-2 Medium_general", [
        ("quoref", "val", "f1", {"total": 0.1200}),
        ("quoref_contrast", "test", "f1", {"total": 0.1708}),
        ("ropes", "val", "f1", {"total": 0.0940}),
        ("ropes_contrast", "test", "f1", {"total": 0.0635}),
        ("drop", "val", "rouge_l_thesis", {"total": 0.0183}),
        ("drop_contrast", "test", "rouge_l_thesis", {"total": 0.0153}),
        ("boolq_cs", "test", "accuracy", {"total": 58.42}),
        ("commonsenseqa", "val", "accuracy", {"total": 21.87}),
        ("winogrande", "val", "accuracy", {"total": 17.36}),
        ("piqa", "val", "accuracy", {"total": 10.39}),
        ("siqa", "val", "accuracy", {"total": 24.92}),
    ])
    + _rows("3.8", "NeMoT_general", [
        ("quoref", "val", "f1", {"total": 0.1223}),
        ("quoref_contrast", "test", "f1", {"total": 0.1754}),
        ("ropes", "val", "f1", {"total": 0.0381}),
        ("ropes_contrast", "test", "f1", {"total": 0.0745}),
        ("drop", "val", "rouge_l_thesis", {"total": 0.0183}),
        ("drop_contrast", "test", "rouge_l_thesis", {"total": 0.0143}),
        ("boolq_cs", "test", "accuracy", {"total": 55.69}),
        ("commonsenseqa", "val", "accuracy", {"total": 20.39}),
        ("winogrande", "val", "accuracy", {"total": 36.94}),
        ("piqa", "val", "accuracy", {"total": 31.72}),
        ("siqa", "val", "accuracy", {"total": 28.25}),
    ])
    + _rows("3.8", "SOTA", [
        ("quoref", "test", "f1", {"total": 0.8670}),
        ("quoref_contrast", "test", "f1", {"total": 0.554}),
        ("ropes", "test", "f1", {"total": 0.8025}),
        ("ropes_contrast", "test", "f1", {"total": 0.455}),
        ("drop", "test", "drop_f1", {"total": 0.9010}),
        ("boolq_cs", "test", "accuracy", {"total": 80.4}),
        ("commonsenseqa", "test", "accuracy", {"total": 83.3}),
        ("winogrande", "test", "accuracy", {"total": 88.29}),
        ("piqa", "test", "accuracy", {"total": 90.13}),
        ("siqa", "test", "accuracy", {"total": 83.15}),
    ])
)

RESULTS = TABLE_3_4 + TABLE_3_7 + TABLE_3_8

LM_DATASETS = ("lambada", "wikitext2", "wikitext103", "ptb")
LM_DATASET_TITLES = {"lambada": "LAMBADA", "wikitext2": "WikiText-2", "wikitext103": "WikiText-103", "ptb": "PTB"}


@dataclasses.dataclass(frozen=True)
class PerplexityRow:
    """A row of Table 3.1 (zero-shot perplexity on the test sets).

    Attributes:
        model: ``"GPT-2 Small"``, ``"GPT-2 Medium"`` or ``"NeMoT_<checkpoint>"``
            (checkpoint x = after 5,000·x iterations).
        window: sliding window w (GPT-2 rows: 1024, as reported by Radford et al.).
        values: dataset key -> perplexity.
    """

    model: str
    window: int
    values: dict


def _ppl(model, window, lambada, wikitext2, wikitext103, ptb):
    values = dict(zip(LM_DATASETS, (lambada, wikitext2, wikitext103, ptb)))
    return PerplexityRow(model, window, values)


# Table 3.1: ♣ rows are window 768, the ♠ row window 32.
TABLE_3_1 = (
    _ppl("GPT-2 Small", 1024, 35.13, 29.41, 37.50, 65.85),
    _ppl("GPT-2 Medium", 1024, 15.60, 22.76, 26.37, 47.33),
    _ppl("NeMoT_200", 768, 71.33, 36.91, 33.32, 36.24),
    _ppl("NeMoT_183", 768, 71.25, 36.96, 33.36, 36.25),
    _ppl("NeMoT_173", 768, 71.77, 36.94, 33.40, 36.35),
    _ppl("NeMoT_155", 768, 71.85, 37.26, 33.66, 36.53),
    _ppl("NeMoT_130", 768, 73.48, 38.01, 34.56, 38.05),
    _ppl("NeMoT_111", 768, 75.86, 38.72, 35.37, 37.72),
    _ppl("NeMoT_200", 32, 71.33, 30.81, 27.77, 31.89),
)


# nemot.data split names -> the thesis' "val" (validation) column.
SPLIT_ALIASES = {"dev": "val", "valid": "val", "validation": "val"}
# nemot.data registers the two ARC parts as datasets; the thesis reports them as subsets of ARC.
PART_DATASETS = {"arc_easy": ("arc", "easy"), "arc_challenge": ("arc", "challenge")}


def results_for(dataset, split=None, table=None):
    """Thesis rows for ``dataset`` (optionally one ``split`` / ``table``), in table order.

    Split names ``dev``/``valid``/``validation`` mean the thesis' ``val``;
    ``arc_easy``/``arc_challenge`` give ARC's Easy/Hard column as ``total``.

    >>> [(r.model, r.scores) for r in results_for("arc_challenge", "test", table="3.7")][:1]
    [('GPT-2 Medium_general', {'total': 33.62})]
    """
    split = SPLIT_ALIASES.get(split, split)
    parent, part = PART_DATASETS.get(dataset, (dataset, None))
    rows = [
        r for r in RESULTS
        if r.dataset == parent and split in (None, r.split) and table in (None, r.table)
    ]
    if part is None:
        return rows
    return [
        dataclasses.replace(r, dataset=dataset, scores={"total": r.scores[part]})
        for r in rows if part in r.scores
    ]


def lm_perplexity(model, window):
    """Table 3.1 values (dataset -> perplexity) of ``model`` at ``window``."""
    for row in TABLE_3_1:
        if row.model == model and row.window == window:
            return dict(row.values)
    available = sorted({(row.model, row.window) for row in TABLE_3_1})
    raise KeyError(f"Table 3.1 has no row for model {model!r} at window {window}; rows: {available}")
