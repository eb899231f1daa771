"""Evaluation reports: predictions JSONL, metrics JSON and thesis-style markdown tables.

A *record* is one evaluated question::

    {"id": "q1", "prediction": "(2)", "golds": ["(2)"], "subset": "middle"}

``golds`` is a string or a list of strings (for ``drop_f1`` a list may hold
tuples of spans); ``subset`` is optional (RACE ``middle``/``high``, ARC
``easy``/``challenge``). :func:`write_report` scores the records with one or
more metrics of :mod:`nemot.evaluation.metrics` and writes, into one folder,
``<dataset>_<split>_predictions.jsonl`` (records plus their per-question
``score``), ``<dataset>_<split>_metrics.json`` and ``<dataset>_<split>_report.md``,
a table laid out like thesis Tables 3.4/3.7/3.8 with the thesis' rows beneath ours.
:func:`write_lm_report` does the same for zero-shot perplexity (Table 3.1).

Where the thesis' rows use another metric than the one asked for (ROUGE-L from
the ``rouge`` package, not nemot's ``rouge-score``,
:data:`nemot.evaluation.thesis_numbers.THESIS_IMPLEMENTATIONS`; SQuAD's F1 on a
dataset scored with DROP's F1), the report scores both and gives each its own
column, the thesis' rows in the column of the metric that produced them, and a
note under the table says which is which.

Numbers are shown like the thesis: four significant figures, accuracy in
percent, F1 and ROUGE-L as fractions, ``(ep#)`` after a row's first number.

Example:

>>> records = [{"id": "1", "prediction": "(1)", "golds": ["(1)"], "subset": "middle"},
...            {"id": "2", "prediction": "(3)", "golds": ["(2)"], "subset": "high"}]
>>> evaluate_records(records, "accuracy")["scores"]
{'total': 0.5, 'high': 0.0, 'middle': 1.0}
"""

import json
from pathlib import Path

from nemot import files
from nemot.evaluation import metrics, plots, thesis_numbers

DATASET_TITLES = {
    "squad_v2": "SQuADv2", "race": "RACE", "boolq": "BoolQ", "narrativeqa": "NarrativeQA",
    "arc": "ARC", "arc_easy": "ARC-Easy", "arc_challenge": "ARC-Hard", "obqa": "OBQA",
    "mctest": "MCTest", "drop": "DROP", "drop_contrast": "DROP-CS",
    "quoref": "Quoref", "quoref_contrast": "Quoref-CS", "ropes": "ROPES", "ropes_contrast": "ROPES-CS",
    "boolq_cs": "BoolQ-CS", "commonsenseqa": "CQA", "winogrande": "WG", "piqa": "PIQA", "siqa": "SIQA",
}
METRIC_TITLES = {
    "accuracy": "Accuracy", "f1": "F1-score", "exact_match": "Exact match",
    "rouge_l": "ROUGE-L", "rouge_l_thesis": "ROUGE-L (thesis)", "drop_f1": "DROP F1",
}
# What a column is, printed under a table that has more than one metric.
METRIC_NOTES = {
    "rouge_l": "nemot's default, the `rouge-score` package (lower-cased, punctuation removed)",
    "rouge_l_thesis": "as the thesis computed it, the `rouge` package 1.0.1 (case-sensitive, "
                      "punctuation kept on words, distinct words counted); the thesis' rows are "
                      "in this column",
    "drop_f1": "the official DROP F1 (drop_eval.py)",
    "f1": "SQuAD's token F1 after normalisation, the best gold",
    "exact_match": "SQuAD's exact match after normalisation, the best gold",
}
SUBSET_TITLES = {"total": "Total", "middle": "M", "high": "H", "challenge": "Hard", "easy": "Easy"}
_SUBSET_ORDER = ("total", "middle", "high", "challenge", "easy")
_REQUIRED_FIELDS = ("id", "prediction", "golds")


def _check_records(records, source="records"):
    records = list(records)
    if not records:
        raise ValueError(f"{source}: no predictions to evaluate")
    for index, record in enumerate(records):
        where = f"{source}[{index}]"
        if not isinstance(record, dict):
            raise TypeError(f"{where}: expected a dict with fields {_REQUIRED_FIELDS}, got {type(record).__name__}")
        missing = [field for field in _REQUIRED_FIELDS if field not in record]
        if missing:
            raise ValueError(f"{where} (id {record.get('id')!r}): missing field(s) {missing}")
        if not isinstance(record["prediction"], str):
            raise TypeError(f"{where} (id {record['id']!r}): field 'prediction' must be a string")
    return records


def evaluate_records(records, metric):
    """Score ``records`` with ``metric``.

    Returns:
        ``{"metric", "num_questions", "scores": {"total": ..., subset: ...},
        "per_question": [...]}`` with scores as fractions in [0, 1].
    """
    records = _check_records(records)
    scorer = metrics.get_metric(metric)
    per_question = []
    for index, record in enumerate(records):
        try:
            per_question.append(scorer(record["prediction"], record["golds"]))
        except (TypeError, ValueError) as error:
            raise ValueError(f"records[{index}] (id {record['id']!r}): {error}") from error
    subsets = [record.get("subset") for record in records]
    has_subsets = any(subset is not None for subset in subsets)
    scores = metrics.aggregate(per_question, subsets if has_subsets else None)
    return {"metric": metric, "num_questions": len(records), "scores": scores, "per_question": per_question}


def format_value(value):
    """Four significant figures, trailing zeros kept (thesis style): 53.9 -> ``"53.90"``; a
    zero as the percentages beside it read, ``"0.00"`` (four significant figures of zero
    would be ``"0.000"``)."""
    if value is None:
        return "N/A"
    return "0.00" if value == 0 else f"{value:#.4g}"


def _ordered_subsets(score_dicts):
    names = {name for scores in score_dicts for name in scores}
    known = [name for name in _SUBSET_ORDER if name in names]
    return known + sorted(names - set(known))


def _markdown_table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def _score_cells(scores, columns, epoch=None):
    """Cells for ``columns`` ((metric, subset) pairs) of ``scores`` ({metric: {subset: value}})."""
    values = [scores.get(metric, {}).get(subset) for metric, subset in columns]
    cells = [format_value(value) for value in values]
    if epoch is not None:
        first = next((i for i, value in enumerate(values) if value is not None), 0)
        cells[first] += f" (ep{epoch})"
    return cells


def report_metrics(metric, dataset=None, split=None, table=None):
    """The metrics a report shows for ``metric`` (a name or a list, the first the primary).

    Those given, then the thesis' implementation of each where it differs
    (``rouge_l`` -> ``rouge_l_thesis``), then any other metric the thesis' rows for
    ``dataset``/``split`` use (e.g. SQuAD's F1 where a dataset's own metric is
    another), so that the thesis' rows always have a column of their own metric.

    >>> report_metrics("rouge_l")
    ['rouge_l', 'rouge_l_thesis']
    """
    names = [metric] if isinstance(metric, str) else list(metric)
    if not names:
        raise ValueError("no metric given: expected a metric name or a list of them")
    for name in list(names):
        metrics.get_metric(name)
        variant = thesis_numbers.THESIS_IMPLEMENTATIONS.get(name)
        if variant is not None and variant not in names:
            names.append(variant)
    if dataset is not None:
        for row in thesis_numbers.results_for(dataset, split, table):
            if row.metric not in names:
                names.append(row.metric)
    return names


def results_table(dataset, split, metric, scores, model_name="NeMoT (this run)", epoch=None, table=None,
                  num_questions=None):
    """Markdown table: our ``scores`` (fractions) then the thesis rows for the same cells.

    Args:
        dataset, split: e.g. ``"race"``, ``"val"`` (keys of :mod:`thesis_numbers`).
        metric: a metric name, or a list of them (one column group each).
        scores: ``{"total": ..., subset: ...}`` as fractions; with a list of
            metrics, ``{metric: {"total": ..., ...}}``.
        model_name: label of our row.
        epoch: our epoch, shown as ``(ep#)`` like the thesis.
        table: ``"3.4"``, ``"3.7"``, ``"3.8"`` or ``None`` for the rows of every table.
        num_questions: questions behind our row, said under the table.

    Thesis rows are shown in the column group of the metric they were computed with.
    """
    names = [metric] if isinstance(metric, str) else list(metric)
    scores = {metric: scores} if isinstance(metric, str) else scores
    # One part of ARC is a dataset of its own: its Total is the thesis' column of that part
    # (thesis_numbers.results_for), which a column of the same subset would only repeat.
    part = thesis_numbers.PART_DATASETS.get(dataset, (None, None))[1]
    ours = {m: {k: v * metrics.DISPLAY_SCALE[m] for k, v in scores[m].items() if k != part}
            for m in names}
    thesis_rows = [r for r in thesis_numbers.results_for(dataset, split, table) if r.metric in names]
    columns = [(m, subset) for m in names
               for subset in _ordered_subsets([ours[m]] + [r.scores for r in thesis_rows if r.metric == m])]
    rows = [[model_name] + _score_cells(ours, columns, epoch)]
    rows += [[f"{r.model} (thesis Table {r.table})"] + _score_cells({r.metric: r.scores}, columns, r.epoch)
             for r in thesis_rows]
    name = f"{DATASET_TITLES.get(dataset, dataset)}-{split}"
    units = "; ".join(METRIC_TITLES[m] + (" in percent" if metrics.DISPLAY_SCALE[m] == 100
                                          else " as a fraction") for m in names)
    scored = "" if num_questions is None else f"{model_name}: {num_questions} questions scored. "
    footer = f"\n{scored}{units}, as in the thesis.\n"
    if len(names) == 1:
        header = ["Model"] + [SUBSET_TITLES.get(subset, subset) for _, subset in columns]
        return (f"### {name} ({METRIC_TITLES[names[0]]})\n\n" + _markdown_table(header, rows) + "\n"
                + footer)
    header = ["Model"] + [METRIC_TITLES[m] + ("" if subset == "total" else f" {SUBSET_TITLES.get(subset, subset)}")
                          for m, subset in columns]
    notes = "".join(f"- {METRIC_TITLES[m]}: {METRIC_NOTES[m]}.\n" for m in names if m in METRIC_NOTES)
    return f"### {name}\n\n" + _markdown_table(header, rows) + "\n" + footer + "\n" + notes


def write_jsonl(path, rows):
    with files.atomic_open(path, "w") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")


def read_predictions(path):
    """Records from a predictions JSONL file; errors name the file, line and field."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for line_number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{line_number}: not valid JSON ({error.msg})") from error
            try:
                _check_records([record], source="record")
            except (TypeError, ValueError) as error:
                raise ValueError(f"{path}:{line_number}: {error}") from error
            records.append(record)
    if not records:
        raise ValueError(f"{path}: no predictions in the file")
    return records


def write_report(out_dir, records, metric, dataset, split, model_name="NeMoT (this run)", epoch=None, table=None,
                 training_log=None):
    """Score ``records`` and write predictions JSONL, metrics JSON and a markdown table.

    Args:
        out_dir: folder to write into (created if needed).
        records: list of ``{"id", "prediction", "golds"[, "subset"]}`` dicts.
        metric: a name of ``nemot.evaluation.metrics.METRICS``, or a list of them
            (the first is the primary); the metrics of the thesis' rows are
            added (:func:`report_metrics`).
        dataset, split: names used in file names and to find the thesis numbers.
        model_name, epoch, table: see :func:`results_table`.
        training_log: optional training results CSV (see :mod:`plots`); when
            given, ``<dataset>_<split>_curves.png`` is drawn beside the metrics,
            linked from the markdown, and the ♣/♠ epochs go into the JSON.

    Each record in the JSONL gets ``score`` (primary metric) and, with several
    metrics, ``scores`` (every metric). The JSON has ``metric``/``scores`` of the
    primary metric and ``scores_by_metric`` of all.

    Returns:
        ``{"predictions": path, "metrics": path, "report": path, "scores": {...}}``
        (primary metric's scores) plus ``"curves": path`` with a training log.

    Example:
        ``write_report("runs/race", records, "accuracy", "race", "val", epoch=4)``
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    names = report_metrics(metric, dataset, split, table)
    primary = names[0]
    results = {name: evaluate_records(records, name) for name in names}
    prefix = f"{dataset}_{split}"
    paths = {
        "predictions": out_dir / f"{prefix}_predictions.jsonl",
        "metrics": out_dir / f"{prefix}_metrics.json",
        "report": out_dir / f"{prefix}_report.md",
    }
    scored = []
    for i, record in enumerate(records):
        row = dict(record, score=results[primary]["per_question"][i])
        if len(names) > 1:
            row["scores"] = {name: results[name]["per_question"][i] for name in names}
        scored.append(row)
    write_jsonl(paths["predictions"], scored)
    thesis = [
        {"table": r.table, "model": r.model, "metric": r.metric, "scores": r.scores, "epoch": r.epoch}
        for r in thesis_numbers.results_for(dataset, split, table) if r.metric in names
    ]
    by_metric = {name: results[name]["scores"] for name in names}
    summary = {
        "dataset": dataset, "split": split, "metric": primary, "model": model_name, "epoch": epoch,
        "num_questions": results[primary]["num_questions"], "scores": by_metric[primary],
        "display_scale": metrics.DISPLAY_SCALE[primary], "metrics": names,
        "scores_by_metric": by_metric, "thesis": thesis,
    }
    markdown = results_table(dataset, split, names, by_metric, model_name, epoch, table,
                             num_questions=results[primary]["num_questions"])
    if training_log is not None:
        paths["curves"] = out_dir / f"{prefix}_curves.png"
        club, spade = plots.plot_training_curves(
            training_log, paths["curves"], title=f"{model_name}: {dataset}", metric_name=f"validation {primary}"
        )
        summary["club_epoch"], summary["spade_epoch"] = club, spade
        markdown += f"\n♣ lowest validation loss: epoch {club}; ♠ best validation {primary}: epoch {spade}.\n"
        markdown += f"\n![training curves]({paths['curves'].name})\n"
    files.write_json(paths["metrics"], summary, indent=2, ensure_ascii=False)
    files.write_text(paths["report"], markdown)
    return dict(paths, scores=by_metric[primary])


# --- zero-shot language modelling (Table 3.1) ---------------------------------

def _perplexity_value(value, key):
    if hasattr(value, "perplexity"):
        return float(value.perplexity)
    if isinstance(value, (int, float)):
        return float(value)
    raise TypeError(f"results[{key!r}]: expected a PerplexityResult or a number, got {type(value).__name__}")


def _lm_label(model, window):
    # Table 3.1 marks NeMoT rows ♣ for window 768 and ♠ for window 32.
    marker = {768: " ♣", 32: " ♠"}.get(window, "") if model.startswith("NeMoT") else ""
    return f"{model}{marker} (w={window})"


def lm_table(results, model_name="NeMoT (this run)"):
    """Markdown table of perplexities, datasets as columns, like thesis Table 3.1.

    Args:
        results: ``{(dataset, window): PerplexityResult or float}``.
        model_name: label of our rows (one per window).
    """
    ours = {}
    for key, value in results.items():
        if not (isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int)):
            raise ValueError(f"results key {key!r}: expected (dataset, window)")
        ours.setdefault(key[1], {})[key[0]] = _perplexity_value(value, key)
    extra = sorted({d for row in ours.values() for d in row} - set(thesis_numbers.LM_DATASETS))
    datasets = list(thesis_numbers.LM_DATASETS) + extra
    header = ["Model"] + [f"{thesis_numbers.LM_DATASET_TITLES.get(d, d)} (PPL)" for d in datasets]

    def cells(values):
        return [("N/A" if values.get(d) is None else f"{values[d]:.2f}") for d in datasets]

    rows = [[_lm_label(model_name, window)] + cells(ours[window]) for window in sorted(ours, reverse=True)]
    rows += [
        [_lm_label(r.model, r.window) + " (thesis Table 3.1)"] + cells(r.values) for r in thesis_numbers.TABLE_3_1
    ]
    return "### Zero-shot language modelling, test sets (perplexity)\n\n" + _markdown_table(header, rows) + "\n"


def write_lm_report(out_dir, results, model_name="NeMoT (this run)"):
    """Write ``lm_perplexity.json`` and ``lm_perplexity.md`` (Table 3.1 layout) into ``out_dir``.

    Returns ``{"metrics": path, "report": path}``.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    table = lm_table(results, model_name)
    entries = []
    for (dataset, window), value in sorted(results.items()):
        entry = value.to_dict() if hasattr(value, "to_dict") else {"perplexity": float(value), "window": window}
        entries.append(dict(entry, dataset=dataset))
    thesis = [{"model": r.model, "window": r.window, "values": r.values} for r in thesis_numbers.TABLE_3_1]
    paths = {"metrics": out_dir / "lm_perplexity.json", "report": out_dir / "lm_perplexity.md"}
    files.write_json(paths["metrics"], {"model": model_name, "results": entries, "thesis": thesis},
                     indent=2, ensure_ascii=False)
    files.write_text(paths["report"], table)
    return paths
