"""Statistics, report and figure of an experiment's finished runs (the protocol of
:mod:`nemot.experiments.protocol`): every variant as mean ± SD, a 95% confidence interval
and Welch's t-test between variants, beside the paper's numbers.

Example:
    >>> print(write_report("runs/modact/names_lstm"))
"""

import dataclasses
import itertools
import json
import math
import statistics
from pathlib import Path

from scipy import stats

from nemot.experiments.protocol import collect, experiment_module

CONFIDENCE = 0.95


# ---------------------------------------------------------------- statistics

@dataclasses.dataclass(frozen=True)
class Summary:
    """Mean, sample SD (n - 1) and the two-sided t confidence interval of the mean."""

    n: int
    mean: float
    sd: float
    ci_low: float
    ci_high: float


def summarize(values, confidence=CONFIDENCE):
    """:class:`Summary` of ``values``: ``mean ± t_{(1+c)/2, n-1} sd / sqrt(n)``.

    With one value the SD and the interval are NaN (undefined), not 0.
    """
    values = [float(v) for v in values]
    if not values:
        raise ValueError("no values to summarize")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return Summary(1, mean, math.nan, math.nan, math.nan)
    sd = statistics.stdev(values)
    half = stats.t.ppf((1 + confidence) / 2, len(values) - 1) * sd / math.sqrt(len(values))
    return Summary(len(values), mean, sd, mean - half, mean + half)


def welch(a, b):
    """Welch's unequal-variance t-test: ``(t, degrees of freedom, two-sided p)``.

    NaN where undefined (fewer than two values on a side, or no variance in either).
    """
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan, math.nan
    result = stats.ttest_ind(a, b, equal_var=False)
    return float(result.statistic), float(result.df), float(result.pvalue)


def hedges_g(a, b):
    """Hedges' g: the difference of means over the pooled SD, bias-corrected by
    ``1 - 3 / (4 (n_a + n_b) - 9)`` (the effect size of the modulated-activation paper's
    Table 4)."""
    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return math.nan
    pooled = math.sqrt(((na - 1) * statistics.variance(a) + (nb - 1) * statistics.variance(b))
                       / (na + nb - 2))
    if pooled == 0:
        return math.nan
    return (statistics.fmean(a) - statistics.fmean(b)) / pooled * (1 - 3 / (4 * (na + nb) - 9))


def paper_numbers(module, name, variant):
    """The paper's ``{metric: number}`` for one variant of experiment (or paper table)
    ``name``."""
    paper = getattr(module, "PAPER", {})
    return paper.get(f"{name}/{variant}", paper.get(variant, {}))


def _fmt(x, digits=4):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def report(output_dir):
    """Markdown tables of the finished runs: per metric, every variant's n, mean ± SD,
    95% CI and the paper's number; then every pair of variants with Welch's t-test and
    Hedges' g; then, where the recipe has them, the paper's layout (``paper_table``) and
    what the runs cost (``cost_table``). Returns ``(markdown, data)``."""
    manifest, results = collect(output_dir)
    module = experiment_module(manifest["reproduction"], source=str(output_dir))
    variants = [v for v in manifest["variants"] if v in results]
    metrics = list(dict.fromkeys(m for v in variants for m in results[v]))
    lines = [f"# {manifest['name']} ({manifest['reproduction']})", "",
             f"config `{manifest['config']}`" + (
                 f", overrides `{' '.join(manifest['overrides'])}`" if manifest["overrides"]
                 else ""), ""]
    synthetic = manifest.get("synthetic", False)
    table = manifest.get("table", manifest["name"])  # the paper's table, if it is not the name
    if synthetic:
        lines += ["**Synthetic data**: these runs read generated data, so the paper's numbers "
                  "are not comparable and are not shown.", ""]
    data = {"manifest": manifest, "summary": {}, "tests": {}}
    for metric in metrics:
        lines += [f"## {metric}", "", "| variant | n | mean ± SD | 95% CI | paper |",
                  "|---|---|---|---|---|"]
        for variant in variants:
            values = results[variant].get(metric)
            if not values:
                continue
            s = summarize(values)
            paper = None if synthetic else paper_numbers(module, table, variant).get(metric)
            data["summary"].setdefault(variant, {})[metric] = dict(
                dataclasses.asdict(s), values=values, paper=paper)
            lines.append(f"| {variant} | {s.n} | {_fmt(s.mean)} ± {_fmt(s.sd)} | "
                         f"[{_fmt(s.ci_low)}, {_fmt(s.ci_high)}] | {_fmt(paper)} |")
        pairs = [(a, b) for a, b in _pairs(variants, getattr(module, "BASELINE", None))
                 if results[a].get(metric) and results[b].get(metric)]
        if pairs:
            lines += ["", "| variants | difference | Welch t | df | p | Hedges' g |",
                      "|---|---|---|---|---|---|"]
        for a, b in pairs:
            x, y = results[a][metric], results[b][metric]
            t, df, p = welch(x, y)
            g = hedges_g(x, y)
            diff = statistics.fmean(x) - statistics.fmean(y)
            data["tests"].setdefault(metric, {})[f"{a} vs {b}"] = dict(
                difference=diff, t=t, df=df, p=p, hedges_g=g)
            lines.append(f"| {a} vs {b} | {_fmt(diff)} | {_fmt(t, 3)} | {_fmt(df, 1)} | "
                         f"{_fmt(p)} | {_fmt(g, 3)} |")
        lines.append("")
    if getattr(module, "paper_table", None):
        table, data["paper_table"] = module.paper_table(output_dir, manifest)
        lines += ["## The paper's layout", "", table, ""]
    if getattr(module, "cost_table", None):
        cost, data["cost"] = module.cost_table(output_dir, manifest)
        lines += ["## Cost", "", cost, ""]
    note = getattr(module, "PAPER_NOTES", {}).get(table)
    if note and not synthetic:
        lines += [f"Paper: {note}", ""]
    return "\n".join(lines), data


def _pairs(variants, baseline):
    """Every pair of variants; a pair with ``baseline`` is ``(other, baseline)`` and comes
    first, so that its difference reads "other minus baseline"."""
    pairs = list(itertools.combinations(variants, 2))
    if baseline not in variants:
        return pairs
    against = [(b, a) if a == baseline else (a, b) for a, b in pairs if baseline in (a, b)]
    return against + [p for p in pairs if baseline not in p]


def json_safe(value):
    """``value`` with every NaN or infinity replaced by None (JSON has neither)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_report(output_dir):
    """Write ``report.md``, ``report.json``, the figure ``comparison.png`` and the
    histograms ``distributions.png`` into ``output_dir``; returns the markdown."""
    text, data = report(output_dir)
    module = experiment_module(data["manifest"]["reproduction"], source=str(output_dir))
    plot_report(data, Path(output_dir, FIGURE), getattr(module, "BASELINE", None))
    text += f"\n![every metric's mean and 95% CI]({FIGURE})\n"
    metric = plot_distributions(data, Path(output_dir, DISTRIBUTIONS),
                                getattr(module, "DISTRIBUTION_METRIC", None))
    if metric:
        text += f"\n![{metric} over seeds, per variant]({DISTRIBUTIONS})\n"
    Path(output_dir, "report.md").write_text(text + "\n")
    Path(output_dir, "report.json").write_text(
        json.dumps(json_safe(data), indent=2, default=str, allow_nan=False) + "\n")
    return text


# ------------------------------------------------------------------- figure

FIGURE = "comparison.png"
# Drawn against each other when both are reported (issue 28: the cost of a mechanism).
SCORE_AND_COST = ("score", "added_parameters")


def plot_report(data, path, baseline=None):
    """Draw ``data`` (:func:`report`'s) into the PNG ``path``: one panel per metric with
    each variant's mean and 95% CI (a variant with one run: its value, no interval), the
    baseline's mean as a dashed line; plus ``score`` against ``added_parameters`` where
    both are reported."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    summary = data["summary"]
    variants = list(summary)
    metrics = list(dict.fromkeys(m for v in variants for m in summary[v]))
    scatter = all(m in metrics for m in SCORE_AND_COST)
    panels = len(metrics) + scatter
    columns = min(panels, 3)
    rows = math.ceil(panels / columns)
    figure = Figure(figsize=(4.6 * columns, 0.4 * len(variants) * rows + 1.6 * rows),
                    layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, metric in zip(axes, metrics):
        _interval_panel(ax, summary, variants, metric, baseline)
    if scatter:
        _cost_panel(axes[len(metrics)], summary, variants)
    for ax in axes[panels:]:
        ax.set_visible(False)
    name = data["manifest"]["name"]
    figure.suptitle(f"{name}: mean and 95% CI over seeds")
    figure.savefig(path, dpi=120)
    return path


DISTRIBUTIONS = "distributions.png"


def plot_distributions(data, path, metric=None):
    """Histograms of one metric's values over seeds, one per variant on shared bins (the
    form of seed 003's Table 8; :func:`nemot.evaluation.plots.plot_distributions`):
    ``metric`` (a recipe's ``DISTRIBUTION_METRIC``) or the first one reported, with the
    paper's number as a reference line where there is one. Non-finite
    values (a diverged run) are left out; returns the metric drawn, or None when no
    variant has a finite value of it."""
    from nemot.evaluation.plots import plot_distributions as histograms

    summary = data["summary"]
    metrics = list(dict.fromkeys(m for v in summary for m in summary[v]))
    metric = metric if metric in metrics else next(iter(metrics), None)
    values = {v: [x for x in summary[v][metric]["values"] if math.isfinite(x)]
              for v in summary if metric in summary[v]} if metric else {}
    if not any(values.values()):
        return None
    paper = {v: summary[v][metric].get("paper") for v in values}
    histograms(values, path, metric, title=f"{data['manifest']['name']}: {metric} over seeds",
               reference=paper)
    return metric


def _interval(entry):
    """``(mean, [low error], [high error])`` of a summary entry (no error with one run)."""
    mean, low, high = entry["mean"], entry["ci_low"], entry["ci_high"]
    if low is None or math.isnan(low):
        return mean, 0.0, 0.0
    return mean, mean - low, high - mean


def _interval_panel(ax, summary, variants, metric, baseline):
    shown = [v for v in variants if metric in summary[v]]
    for y, variant in enumerate(shown):
        mean, low, high = _interval(summary[variant][metric])
        ax.errorbar(mean, y, xerr=[[low], [high]], fmt="o", capsize=3,
                    color="0.4" if variant == baseline else "C0")
    if baseline in shown:
        ax.axvline(summary[baseline][metric]["mean"], color="0.6", linestyle="--",
                   linewidth=1)
    ax.set_yticks(range(len(shown)), shown)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.set_title(metric)
    ax.grid(axis="x", alpha=0.3)


def _cost_panel(ax, summary, variants):
    score, cost = SCORE_AND_COST
    for i, variant in enumerate(v for v in variants if score in summary[v]
                                and cost in summary[v]):
        mean, low, high = _interval(summary[variant][score])
        x = summary[variant][cost]["mean"]
        ax.errorbar(x, mean, yerr=[[low], [high]], fmt="o", capsize=3, color=f"C{i}",
                    label=variant)
    costs = [summary[v][cost]["mean"] for v in variants if cost in summary[v]]
    # Linear below the smallest added cost, logarithmic above: 0 and 10^6 side by side.
    ax.set_xscale("symlog", linthresh=min([c for c in costs if c > 0] or [1.0]))
    ax.set_xlabel(f"{cost} (symmetric log)")
    ax.set_ylabel(score)
    ax.set_title(f"{score} against {cost}")
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3)
