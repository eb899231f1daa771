"""Statistics, report and figure of an experiment's finished runs (the protocol of
:mod:`nemot.experiments.protocol`): every variant's mean, SD and a 95% confidence interval
that respects what the metric is (:data:`KINDS`), and Welch's t-test between variants,
beside the paper's numbers; the settings come from the runs' own ``config.toml``.

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
from nemot.training.toml_files import toml_value

CONFIDENCE = 0.95


# ---------------------------------------------------------------- statistics

# What a metric is, by kind: the bounds of its values (None: unbounded) and how its interval
# is drawn. A bounded metric's interval is a t interval on the logit of its values rescaled
# to (0, 1), mapped back, so it stays inside the bounds: for a correlation that is Fisher's
# z (atanh r = logit((r + 1) / 2) / 2). A count (parameters) is printed as an integer.
KINDS = {
    "mean": None,
    "proportion": (0.0, 1.0),
    "percent": (0.0, 100.0),
    "correlation": (-1.0, 1.0),
    "count": None,
}
METHODS = {
    "mean": "t interval of the mean",
    "proportion": "t interval on the logit scale, mapped back (inside [0, 1])",
    "percent": "t interval on the logit of value/100, mapped back (inside [0, 100])",
    "correlation": "t interval on Fisher's z (atanh r), mapped back (inside [-1, 1])",
    "count": "t interval of the mean",
}
# How far inside its bounds a value on a bound (an accuracy of 1) is moved before the
# logit, as a share of the range: the logit of a bound is infinite.
BOUND_MARGIN = 1e-6


@dataclasses.dataclass(frozen=True)
class Summary:
    """Mean, sample SD (n - 1) and the two-sided confidence interval of the mean (NaN with
    fewer than two values); ``kind`` is one of :data:`KINDS`."""

    n: int
    mean: float
    sd: float
    ci_low: float
    ci_high: float
    kind: str = "mean"


def metric_kind(metric, module=None):
    """The kind (:data:`KINDS`) of ``metric``: the recipe's ``METRIC_KINDS`` entry (its
    ``"*"`` entry for every other metric), else by name: ``*accuracy*`` or ``*_acc`` a
    proportion, ``*pearson*``, ``*spearman*`` or ``*_r`` a correlation, ``*parameters`` a
    count, anything else a mean."""
    kinds = getattr(module, "METRIC_KINDS", {})
    kind = kinds.get(metric, kinds.get("*"))
    if kind is None:
        name = metric.lower()
        if "accuracy" in name or name.endswith("_acc"):
            kind = "proportion"
        elif "pearson" in name or "spearman" in name or name.endswith("_r"):
            kind = "correlation"
        elif name.endswith("parameters"):
            kind = "count"
        else:
            kind = "mean"
    if kind not in KINDS:
        raise ValueError(f"metric {metric!r}: kind {kind!r}: expected one of {list(KINDS)}")
    return kind


def summarize(values, confidence=CONFIDENCE, kind="mean"):
    """:class:`Summary` of ``values`` of a metric of ``kind`` (:data:`KINDS`).

    The interval is ``m ± t_{(1+c)/2, n-1} s / sqrt(n)`` of the values (``mean``,
    ``count``) or of their logit (bounded kinds, mapped back; :data:`METHODS`). With one
    value the SD and the interval are NaN (undefined, not 0); values that are all equal
    have SD 0 and the interval [value, value]. A value outside its kind's bounds is an
    error.
    """
    values = [float(v) for v in values]
    if not values:
        raise ValueError("no values to summarize")
    bounds = KINDS[kind]
    if bounds and any(not bounds[0] <= v <= bounds[1] for v in values):
        raise ValueError(f"values {values} of a {kind} metric: expected values in "
                         f"[{bounds[0]:g}, {bounds[1]:g}]")
    mean = statistics.fmean(values)
    if len(values) < 2:
        return Summary(1, mean, math.nan, math.nan, math.nan, kind)
    if len(set(values)) == 1:
        return Summary(len(values), values[0], 0.0, values[0], values[0], kind)
    sd = statistics.stdev(values)
    t = stats.t.ppf((1 + confidence) / 2, len(values) - 1)
    if not bounds:
        half = t * sd / math.sqrt(len(values))
        return Summary(len(values), mean, sd, mean - half, mean + half, kind)
    low, high = bounds
    logits = [_logit((v - low) / (high - low)) for v in values]
    centre = statistics.fmean(logits)
    half = t * statistics.stdev(logits) / math.sqrt(len(values))
    ci_low, ci_high = (low + (high - low) * _expit(z) for z in (centre - half, centre + half))
    return Summary(len(values), mean, sd, ci_low, ci_high, kind)


def _logit(u):
    u = min(max(u, BOUND_MARGIN), 1 - BOUND_MARGIN)
    return math.log(u / (1 - u))


def _expit(z):
    return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))


def welch(a, b):
    """Welch's unequal-variance t-test: ``(t, degrees of freedom, two-sided p)``.

    NaN where undefined: fewer than two values on a side, or no variance on either side
    (identical values: there is nothing to test). Computed from the sample means and
    variances (the Welch-Satterthwaite degrees of freedom).
    """
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan, math.nan
    va, vb = statistics.variance(a) / len(a), statistics.variance(b) / len(b)
    if va + vb == 0:
        return math.nan, math.nan, math.nan
    t = (statistics.fmean(a) - statistics.fmean(b)) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va ** 2 / (len(a) - 1) + vb ** 2 / (len(b) - 1))
    return t, df, float(2 * stats.t.sf(abs(t), df))


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


def _number(x, kind="mean"):
    """``x`` as the report prints a value of a metric of ``kind``: counts as integers with
    thousands separators, percentages with two decimals, the rest with four."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if kind == "count":
        return f"{x:,.0f}"
    return f"{x:.2f}" if kind == "percent" else f"{x:.4f}"


def _fmt(x, digits=4):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def report(output_dir):
    """Markdown tables of the finished runs: per metric, every row (a variant, or a group of
    its runs that share their settings: :func:`nemot.experiments.protocol.collect`) with n,
    mean, SD, 95% CI and the paper's number; then every pair of rows with Welch's t-test
    and Hedges' g; then, where the recipe has them, the paper's layout (``paper_table``)
    and what the runs cost (``cost_table``); last the settings, read from the runs' own
    ``config.toml``. Returns ``(markdown, data)``."""
    manifest, groups = collect(output_dir)
    module = experiment_module(manifest["reproduction"], source=str(output_dir))
    rows = {g.label: g for g in groups}
    labels = list(rows)
    metrics = list(dict.fromkeys(m for g in groups for m in g.metrics))
    kinds = {metric: metric_kind(metric, module) for metric in metrics}
    pooled = len(rows) == len({g.variant for g in groups})
    variants = list(dict.fromkeys(g.variant for g in groups))
    seeds = sorted({Path(run).name for g in groups for run in g.runs},
                   key=lambda name: (len(name), name))
    runs = sum(len(g.runs) for g in groups)
    lines = [f"# {manifest['name']} ({manifest['reproduction']})", "",
             f"{runs} finished run(s) of {len(variants)} variant(s), {_seed_range(seeds)}. "
             "Every run's settings are its own `<variant>/seed<k>/config.toml`; "
             + ("" if pooled else "runs of one variant with different settings are "
                                  "separate rows, never pooled; ")
             + "what they share is under [Settings](#settings)."]
    lines += _differing_settings(groups)
    synthetic = manifest.get("synthetic", False)
    table = manifest.get("table", manifest["name"])  # the paper's table, if it is not the name
    if synthetic:
        lines += ["**Synthetic data**: these runs read generated data, so the paper's numbers "
                  "are not comparable and are not shown.", ""]
    data = {"manifest": manifest, "kinds": kinds, "summary": {}, "tests": {},
            "variants": {label: g.variant for label, g in rows.items()}}
    for metric in metrics:
        kind = kinds[metric]
        lines += [f"## {metric}", "", "| variant | n | mean | SD | 95% CI | paper |",
                  "|---|---|---|---|---|---|"]
        single = constant = False
        for label in labels:
            values = rows[label].metrics.get(metric)
            if not values:
                continue
            try:
                s = summarize(values, kind=kind)
            except ValueError as error:
                raise ValueError(f"{output_dir}: {label}: {metric}: {error}") from None
            paper = None if synthetic else paper_numbers(
                module, table, rows[label].variant).get(metric)
            data["summary"].setdefault(label, {})[metric] = dict(
                dataclasses.asdict(s), values=values, paper=paper)
            interval = "–" if s.n < 2 or s.sd == 0 else (f"[{_number(s.ci_low, kind)}, "
                                                          f"{_number(s.ci_high, kind)}]")
            single |= s.n < 2
            constant |= s.n > 1 and s.sd == 0
            lines.append(f"| {label} | {s.n} | {_number(s.mean, kind)} | "
                         f"{_number(s.sd, kind)} | {interval} | {_number(paper, kind)} |")
        lines += ["", f"95% CI: {METHODS[kind]}." + (
            " A row of one run has no SD and no interval." if single else "") + (
            " A row whose runs all gave the same value has no interval." if constant else "")]
        pairs = [(a, b) for a, b in _pairs(labels, _baseline(module, rows))
                 if rows[a].metrics.get(metric) and rows[b].metrics.get(metric)]
        runs_each = [(a, b) for a, b in pairs if min(len(rows[a].metrics[metric]),
                                                     len(rows[b].metrics[metric])) > 1]
        tested = [(a, b) for a, b in runs_each
                  if _spread(rows[a].metrics[metric]) or _spread(rows[b].metrics[metric])]
        if pairs:
            lines += ["", "| variants | difference | Welch t | df | p | Hedges' g |",
                      "|---|---|---|---|---|---|"]
        for a, b in pairs:
            x, y = rows[a].metrics[metric], rows[b].metrics[metric]
            t, df, p = welch(x, y)
            g = hedges_g(x, y)
            diff = statistics.fmean(x) - statistics.fmean(y)
            data["tests"].setdefault(metric, {})[f"{a} vs {b}"] = dict(
                difference=diff, t=t, df=df, p=p, hedges_g=g)
            lines.append(f"| {a} vs {b} | {_number(diff, kind)} | {_fmt(t, 3)} | "
                         f"{_fmt(df, 1)} | {_fmt(p)} | {_fmt(g, 3)} |")
        if len(runs_each) < len(pairs):
            lines += ["", "No test (–) where a row has one run."]
        if len(tested) < len(runs_each):
            lines += ["", f"`{metric}` does not vary between the runs of "
                          f"{'every row' if not tested else 'some rows'}: no test (–) "
                          "where neither side varies."]
        lines.append("")
    if not pooled:
        lines += ["The paper's layout and the cost tables pool a variant's runs: not shown "
                  "while runs of one variant differ in their settings.", ""]
    if pooled and getattr(module, "paper_table", None):
        table_text, data["paper_table"] = module.paper_table(output_dir, manifest)
        lines += ["## The paper's layout", "", table_text, ""]
    if pooled and getattr(module, "cost_table", None):
        cost, data["cost"] = module.cost_table(output_dir, manifest)
        lines += ["## Cost", "", cost, ""]
    note = getattr(module, "PAPER_NOTES", {}).get(table)
    if note and not synthetic:
        lines += [f"Paper: {note}", ""]
    settings, data["settings"] = _shared_settings(groups, module)
    lines += ["## Settings", "", settings, ""]
    return "\n".join(lines), data


def _spread(values):
    return len(values) > 1 and len(set(values)) > 1


def _baseline(module, rows):
    """The recipe's ``BASELINE`` while it is one row (not split by settings)."""
    baseline = getattr(module, "BASELINE", None)
    return baseline if baseline in rows else None


def _seed_range(seeds):
    """``"seeds 0–4"``, ``"seeds 0, 2, 7"`` or ``"seed 3"`` of run directory names."""
    numbers = [int(s[len("seed"):]) for s in seeds if s[len("seed"):].isdigit()]
    if len(numbers) != len(seeds):
        return f"runs {', '.join(seeds)}"
    if len(numbers) == 1:
        return f"seed {numbers[0]}"
    if numbers == list(range(numbers[0], numbers[-1] + 1)):
        return f"seeds {numbers[0]}–{numbers[-1]}"
    return "seeds " + ", ".join(map(str, numbers))


def _value(value):
    return "–" if value is None else f"`{toml_value(value)}`"


def _differing_settings(groups):
    """Lines of a table of the settings that differ between rows (empty when none do)."""
    configs = {g.label: g.config or {} for g in groups}
    keys = list(dict.fromkeys(k for c in configs.values() for k in c))
    differ = [k for k in keys if len({json.dumps(c.get(k), default=str)
                                      for c in configs.values()}) > 1]
    if len(groups) < 2 or not differ:
        return [""]
    lines = ["", "Settings that differ between rows:", "",
             "| setting | " + " | ".join(configs) + " |",
             "|---|" + "---|" * len(configs)]
    lines += [f"| {k} | " + " | ".join(_value(c.get(k)) for c in configs.values()) + " |"
              for k in differ]
    return lines + [""]


def _shared_settings(groups, module=None):
    """``(markdown, {key: value})`` of the settings every finished run shares, less those
    no run reads (the recipe's ``unused_settings``)."""
    configs = [g.config for g in groups]
    if any(c is None for c in configs):
        missing = [g.label for g in groups if g.config is None]
        return (f"Runs of {', '.join(missing)} recorded no `config.toml`.", {})
    unused = getattr(module, "unused_settings", None)
    unread = set.intersection(*(set(unused(c)) for c in configs)) if unused else set()
    shared = {k: v for k, v in configs[0].items()
              if k not in unread and all(k in c and c[k] == v for c in configs[1:])}
    lines = ["Shared by every finished run (from their `config.toml`):", "",
             "| setting | value |", "|---|---|"]
    lines += [f"| {k} | {'not recorded' if v is None else _value(v)} |"
              for k, v in shared.items()]
    if unread:
        lines += ["", "Left out, as these runs' model and data do not read them: "
                  + ", ".join(f"`{k}`" for k in configs[0] if k in unread) + "."]
    return "\n".join(lines), shared


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
# Drawn against each other when both are reported: what a mechanism buys for its cost.
SCORE_AND_COST = ("score", "added_parameters")


# The least span of a panel's axis for a bounded metric, so that a difference of 0.002
# between two accuracies is not stretched over the whole panel.
MIN_SPAN = {"proportion": 0.05, "percent": 5.0, "correlation": 0.1}


def colours(labels):
    """One matplotlib colour per row label, the same in every panel and figure."""
    return {label: f"C{i % 10}" for i, label in enumerate(labels)}


def plot_report(data, path, baseline=None):
    """Draw ``data`` (:func:`report`'s) into the PNG ``path`` (:func:`report_figure`)."""
    report_figure(data, baseline).savefig(path, dpi=120)
    return path


def report_figure(data, baseline=None):
    """The figure of ``data`` (:func:`report`'s): one panel per metric with each row's mean
    and 95% CI (a row of one run: its value, hollow, no interval), the paper's number as a
    black diamond and the baseline's mean as a dashed line in the baseline's colour; plus
    ``score`` against ``added_parameters`` where both are reported. Each row has one
    colour in every panel; the legend is below the panels."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    summary = data["summary"]
    labels = list(summary)
    colour = colours(labels)
    kinds = data.get("kinds", {})
    metrics = list(dict.fromkeys(m for v in labels for m in summary[v]))
    scatter = all(m in metrics for m in SCORE_AND_COST)
    panels = len(metrics) + scatter
    columns = min(panels, 3)
    rows = math.ceil(panels / columns)
    figure = Figure(figsize=(4.8 * columns, (0.45 * len(labels) + 1.5) * rows + 0.9),
                    layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(rows, columns, squeeze=False).ravel()
    for ax, metric in zip(axes, metrics):
        _interval_panel(ax, summary, labels, metric, kinds.get(metric, "mean"), baseline,
                        colour)
    if scatter:
        _cost_panel(axes[len(metrics)], summary, labels, colour)
    for ax in axes[panels:]:
        ax.set_visible(False)
    counts = {summary[v][m]["n"] for v in labels for m in summary[v]}
    handles = [Line2D([], [], color=colour[v], marker="o", linestyle="", label=v)
               for v in labels]
    if any(summary[v][m].get("paper") is not None for v in labels for m in summary[v]):
        handles.append(Line2D([], [], color="black", marker="D", linestyle="",
                              markerfacecolor="none", label="paper"))
    if baseline in labels:
        handles.append(Line2D([], [], color=colour[baseline], linestyle="--",
                              label=f"{baseline} mean"))
    figure.legend(handles=handles, loc="outside lower center",
                  ncols=len(handles) if len(handles) <= 8 else math.ceil(len(handles) / 2),
                  fontsize="small", frameon=False)
    name = data["manifest"]["name"]
    if max(counts) < 2:
        title = f"{name}: one run per row, its value (no interval with n = 1)"
    elif min(counts) < 2:
        title = (f"{name}: mean and 95% CI over seeds (rows of one run: hollow, their "
                 "value, no interval)")
    else:
        title = f"{name}: mean and 95% CI over seeds"
    figure.suptitle(title)
    return figure


DISTRIBUTIONS = "distributions.png"


def plot_distributions(data, path, metric=None):
    """Histograms of one metric's values over seeds, one per row on shared bins (the form
    of the modulated-activation paper's Table 8;
    :func:`nemot.evaluation.plots.plot_distributions`), each row in its colour of the
    comparison figure: ``metric`` (a recipe's ``DISTRIBUTION_METRIC``) or the first one
    reported, with the paper's number as a reference line where there is one. Non-finite
    values (a diverged run) are left out; returns the metric drawn, or None when no row has
    a finite value of it."""
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
               colours=colours(list(summary)), reference=paper)
    return metric


def _interval(entry):
    """``(mean, [low error], [high error])`` of a summary entry; None errors with one run."""
    mean, low, high = entry["mean"], entry["ci_low"], entry["ci_high"]
    if entry["n"] < 2 or low is None or math.isnan(low):
        return mean, None, None
    return mean, mean - low, high - mean


def _axis_format(axis, kind):
    """Ticks a reader can read: at most five, counts as 0, 100k, 200k, the rest without an
    offset."""
    from matplotlib.ticker import EngFormatter, MaxNLocator, ScalarFormatter

    axis.set_major_locator(MaxNLocator(nbins=5))
    if kind == "count":
        axis.set_major_formatter(EngFormatter(sep=""))
    else:
        formatter = ScalarFormatter(useOffset=False)
        formatter.set_scientific(False)
        axis.set_major_formatter(formatter)


def _interval_panel(ax, summary, labels, metric, kind, baseline, colour):
    shown = [v for v in labels if metric in summary[v]]
    edges = []
    for y, label in enumerate(shown):
        entry = summary[label][metric]
        mean, low, high = _interval(entry)
        if low is None:
            ax.plot(mean, y, "o", color=colour[label], markerfacecolor="none")
            edges.append(mean)
        else:
            ax.errorbar(mean, y, xerr=[[low], [high]], fmt="o", capsize=3,
                        color=colour[label])
            edges += [mean - low, mean + high]
        if entry.get("paper") is not None:
            ax.plot(entry["paper"], y, "D", color="black", markerfacecolor="none")
            edges.append(entry["paper"])
    if baseline in shown:
        ax.axvline(summary[baseline][metric]["mean"], color=colour[baseline], linestyle="--",
                   linewidth=1)
    _least_span(ax, edges, MIN_SPAN.get(kind), KINDS.get(kind))
    ax.set_yticks(range(len(shown)), shown)
    ax.set_ylim(len(shown) - 0.5, -0.5)
    ax.set_title(metric + ("" if all(summary[v][metric]["n"] > 1 for v in shown)
                           else " (n = 1: no interval)"))
    _axis_format(ax.xaxis, kind)
    ax.grid(axis="x", alpha=0.3)


def _least_span(ax, edges, span, bounds):
    """Widen the x axis to ``span`` around the drawn values (kept inside ``bounds``)."""
    if not span or not edges:
        return
    low, high = min(edges), max(edges)
    if high - low >= span:
        return
    middle = (low + high) / 2
    low, high = middle - span / 2, middle + span / 2
    if bounds:
        shift = max(bounds[0] - low, 0) - max(high - bounds[1], 0)
        low, high = low + shift, high + shift
    ax.set_xlim(low, high)


def _cost_panel(ax, summary, labels, colour):
    score, cost = SCORE_AND_COST
    for label in labels:
        if score not in summary[label] or cost not in summary[label]:
            continue
        mean, low, high = _interval(summary[label][score])
        x = summary[label][cost]["mean"]
        if low is None:
            ax.plot(x, mean, "o", color=colour[label], markerfacecolor="none")
        else:
            ax.errorbar(x, mean, yerr=[[low], [high]], fmt="o", capsize=3,
                        color=colour[label])
    from matplotlib.ticker import EngFormatter, FixedLocator, NullLocator

    costs = [summary[v][cost]["mean"] for v in labels if cost in summary[v]]
    # Linear below the smallest added cost, logarithmic above: 0 and 10^6 side by side,
    # with ticks at 0 and the powers of ten above the linear part (none crowding 0).
    threshold = min([c for c in costs if c > 0] or [1.0])
    ax.set_xscale("symlog", linthresh=threshold)
    powers = [10 ** k for k in range(math.ceil(math.log10(threshold)),
                                     math.floor(math.log10(max(costs + [threshold]))) + 1)]
    ax.xaxis.set_major_locator(FixedLocator([0] + powers))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(EngFormatter(sep=""))
    ax.set_xlabel(f"{cost} (linear to the smallest, then logarithmic)")
    ax.set_ylabel(score)
    ax.set_title(f"{score} against {cost}")
    ax.grid(alpha=0.3)
