"""Our HyperGrid runs beside the paper's numbers.

Reads ``<output_dir>/<variant>/seed<k>/metrics.json`` (what :func:`run_one` and
``nemot runs`` write) and prints, per variant, the mean ± SD over seeds of each score
the paper's table has, next to the paper's value. The paper's Avg columns follow the
official multi-metric rules, so compare an average only with an average; its
per-task cells are single numbers whose metric it does not name for two-metric
tasks (ours: the mean of the task's metrics). Table 1's LG row has QNLI 81.2 and
RTE 84.2, which look swapped or garbled (its columns average 84.28 against its Avg
85.4); they are printed as published.

Example:
    >>> print(report(load("configs/hypergrid/table4.toml")))
"""

import json
import math
import statistics
from pathlib import Path

from nemot.hypergrid.experiment import MAX_ROWS, paper_row, variants

NOTES = (
    "Averages (glue, superglue, avg) follow the official rules: compare them only with the "
    "paper's averages.",
    "Paper Table 1, row LG: QNLI 81.2 / RTE 84.2 look garbled (its columns average 84.28, "
    "not its Avg 85.4); printed as published.",
    "Paper Table 2: the Multi-Model and L rows' task columns average to 75.92 and 75.18 by "
    "SuperGLUE's rule, not their Avg 74.8 and 74.5 (the other rows agree); printed as published.",
    "Paper Table 4: 'Base (Max)' is the max of the four baseline runs (ours: the run with the "
    "best avg); its AVG 79.40 is the runs' mean, not (85.11 + 73.83) / 2 = 79.47.",
)


def collect(output_dir, names):
    """``{variant: [metrics of each seed]}`` from the run directories that have finished."""
    out = {}
    for name in names:
        runs = sorted(Path(output_dir, name).glob("seed*/metrics.json"))
        out[name] = [json.loads(p.read_text(encoding="utf-8")) for p in runs]
    return out


def _cell(values):
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.2f} (n=1)"
    return f"{statistics.fmean(values):.2f} ± {statistics.stdev(values):.2f} (n={len(values)})"


def report(experiment, results=None):
    """The comparison table of ``experiment`` as text (``results`` default: collected)."""
    names = variants(experiment)
    results = collect(experiment.output_dir, names) if results is None else results
    best = MAX_ROWS.get(experiment.table)
    if best in names:
        runs = [r for r in results.get(best, []) if not math.isnan(r.get("avg", math.nan))]
        results = {**results, f"{best} (max)": [max(runs, key=lambda r: r["avg"])] if runs else []}
        names.insert(names.index(best) + 1, f"{best} (max)")
    metrics = []
    for name in names:
        for key in paper_row(experiment, name):
            if not key.endswith("_sd") and key not in metrics:
                metrics.append(key)
    if not metrics:  # no paper row: show what the runs have
        metrics = sorted({k for runs in results.values() for r in runs for k in r
                          if k != "epoch"})
    lines = [f"{experiment.name} (paper {experiment.table}): ours (mean ± SD over seeds) | paper",
             f"{'variant':<16}{'score':<20}{'ours':>28}  {'paper':<14}"]
    for name in names:
        paper = paper_row(experiment, name)
        for metric in metrics:
            ours = [r[metric] for r in results.get(name, []) if metric in r
                    and not math.isnan(r[metric])]
            value = paper.get(metric)
            sd = paper.get(f"{metric}_sd")
            shown = "-" if value is None else (f"{value:.2f}" if sd is None
                                               else f"{value:.2f} ± {sd}")
            lines.append(f"{name:<16}{metric:<20}{_cell(ours):>28}  {shown:<14}")
    return "\n".join(lines + ["", *NOTES])
