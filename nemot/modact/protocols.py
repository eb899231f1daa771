"""NAMES (the paper's Table 4, Simple-LSTM) under several readings of what the paper leaves
open, side by side with the paper's numbers (``nemot modact protocols``).

A *protocol* is the output directory of ``nemot runs --config configs/modact/names_lstm.toml
--set ...`` (docs/modact.md, "NAMES: which reading explains the level"). For each
protocol and each accuracy its runs report (the last epoch's ``test_accuracy``; with
``train.test_each_epoch`` also the mean over epochs and the best epoch), every variant's
mean ± SD and 95% CI beside the paper's mean and interval (from its SD over 30 runs),
Welch's test against the paper's summary statistics, how much of the first protocol's gap
to the paper it closes, the variants' order and the modulated cell's lead over each
control. The figure draws each variant's accuracies under every protocol on shared bins
with the paper's mean as a reference line.

Example::

    nemot modact protocols --out results/modact/names_lstm_protocols \\
        shipped=results/modact/names_lstm split_names=runs/names_split_names
"""

import hashlib
import json
import math
import statistics
from pathlib import Path

from scipy import stats

from nemot.experiments.protocol import collect
from nemot.experiments.report import json_safe, summarize, welch
from nemot.modact.experiment import PAPER

EXPERIMENT = "names_lstm"
VARIANTS = ("modulated", "C1", "C2", "C3")
# Table 4: SD over the paper's 30 runs per variant.
PAPER_SD = {"modulated": 0.00526, "C1": 0.00565, "C2": 0.00531, "C3": 0.00650}
PAPER_RUNS = 30
# The accuracies a run can report, in the order they are shown.
READINGS = {"test_accuracy": "last epoch",
            "test_accuracy_epoch_mean": "mean over epochs",
            "test_accuracy_epoch_best": "best epoch (on test)"}
# Overrides that say where runs go or what they also record, not how they train.
BOOKKEEPING = ("output_dir", "data.dir", "train.test_each_epoch")
FIGURE = "distributions.png"


def paper_summary(variant):
    """``(mean, sd, ci_low, ci_high)`` of the paper's 30 runs of ``variant``."""
    mean, sd = PAPER[f"{EXPERIMENT}/{variant}"]["test_accuracy"], PAPER_SD[variant]
    half = float(stats.t.ppf(0.975, PAPER_RUNS - 1)) * sd / math.sqrt(PAPER_RUNS)
    return mean, sd, mean - half, mean + half


def against_paper(values, variant):
    """Welch's test of ``values`` against the paper's summary statistics: ``(t, df, p)``
    (NaN with fewer than two values)."""
    if len(values) < 2:
        return math.nan, math.nan, math.nan
    mean, sd, _, _ = paper_summary(variant)
    result = stats.ttest_ind_from_stats(statistics.fmean(values), statistics.stdev(values),
                                        len(values), mean, sd, PAPER_RUNS, equal_var=False)
    a, b = statistics.variance(values) / len(values), sd ** 2 / PAPER_RUNS
    df = (a + b) ** 2 / (a ** 2 / (len(values) - 1) + b ** 2 / (PAPER_RUNS - 1))
    return float(result.statistic), df, float(result.pvalue)


def describe(manifest):
    """The overrides that make a protocol (bookkeeping left out), or "as configured"."""
    kept = [o for o in manifest.get("overrides", [])
            if o.partition("=")[0].strip() not in BOOKKEEPING]
    return " ".join(f"`{o}`" for o in kept) or "the config as it is"


def compare(protocols):
    """``data`` of :func:`report`: ``protocols`` is ``{label: run directory}``, the first
    the reference whose gap to the paper the others are measured against."""
    rows, values = [], {}
    for label, directory in protocols.items():
        manifest, groups = collect(directory)
        mixed = sorted(g.label for g in groups if g.label != g.variant)
        if mixed:
            raise ValueError(f"{directory}: runs of one variant with different settings "
                             f"({', '.join(mixed)}); one protocol is one set of settings")
        results = {g.variant: g.metrics for g in groups}
        if manifest["name"] != EXPERIMENT:
            raise ValueError(f"{directory}: runs of {manifest['name']!r}; expected "
                             f"{EXPERIMENT!r} (configs/modact/names_lstm.toml)")
        for metric, reading in READINGS.items():
            got = {v: results[v][metric] for v in VARIANTS if results.get(v, {}).get(metric)}
            if not got:
                continue
            values[(label, metric)] = got
            rows.append(_row(label, directory, describe(manifest), metric, reading, got))
    if not rows:
        raise ValueError("no protocol has finished runs")
    reference = rows[0]
    for row in rows:
        for variant, entry in row["variants"].items():
            base = reference["variants"].get(variant)
            gap = base and base["mean"] - entry["paper"]
            entry["gap_closed"] = (base["mean"] - entry["mean"]) / gap if gap else None
        closed = [e["gap_closed"] for e in row["variants"].values() if e["gap_closed"] is not None]
        row["gap_closed"] = statistics.fmean(closed) if closed else None
    return {"experiment": EXPERIMENT, "paper_runs": PAPER_RUNS,
            "paper": {v: dict(zip(("mean", "sd", "ci_low", "ci_high"), paper_summary(v)))
                      for v in VARIANTS},
            "rows": rows, "values": values}


def _row(label, directory, overrides, metric, reading, got):
    entries = {}
    for variant, vals in got.items():
        s = summarize(vals)
        paper, _, low, high = map(float, paper_summary(variant))
        t, df, p = against_paper(vals, variant)
        entries[variant] = dict(n=s.n, mean=s.mean, sd=s.sd, ci_low=s.ci_low, ci_high=s.ci_high,
                                paper=paper, paper_ci=[low, high], difference=s.mean - paper,
                                welch_vs_paper=dict(t=t, df=df, p=p),
                                in_paper_interval=bool(low <= s.mean <= high), values=vals)
    order = sorted(entries, key=lambda v: -entries[v]["mean"])
    lead = {}
    if "modulated" in got:
        for control in got:
            if control != "modulated":
                t, df, p = welch(got["modulated"], got[control])
                lead[control] = dict(difference=entries["modulated"]["mean"]
                                     - entries[control]["mean"], t=t, df=df, p=p)
    return dict(protocol=label, directory=str(directory), overrides=overrides, metric=metric,
                reading=reading, variants=entries, order=order,
                modulated_first=bool(order) and order[0] == "modulated", modulated_lead=lead)


def _fmt(x, digits=4):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def _p(x):
    return "–" if x is None or math.isnan(x) else ("<.0001" if x < 1e-4 else f"{x:.4f}")


def markdown(data, checksums=None):
    """The report of :func:`compare`'s ``data`` as markdown."""
    paper_order = sorted(VARIANTS, key=lambda v: -data["paper"][v]["mean"])
    lines = ["# NAMES (Table 4, Simple-LSTM) under each protocol", "",
             f"The paper: {PAPER_RUNS} runs per variant; its 95% CI is mean ± "
             f"t·SD/√{PAPER_RUNS} from Table 4's SD. Order: {' > '.join(paper_order)}.", "",
             "| variant | paper mean ± SD | paper 95% CI |", "|---|---|---|"]
    for v in VARIANTS:
        p = data["paper"][v]
        lines.append(f"| {v} | {_fmt(p['mean'])} ± {_fmt(p['sd'], 5)} | "
                     f"[{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}] |")
    lines += ["", "## Protocols", "", f"| protocol | runs ({' / '.join(VARIANTS)}) | "
              "overrides |", "|---|---|---|"]
    for row in data["rows"]:
        if row["metric"] == "test_accuracy":
            n = " / ".join(str(row["variants"][v]["n"]) if v in row["variants"] else "0"
                           for v in VARIANTS)
            lines.append(f"| {row['protocol']} | {n} | {row['overrides']} |")
    lines += ["", "## Test accuracy", "",
              "Each cell: mean ± SD [95% CI] (n); ✓ where the mean is inside the paper's "
              "interval. *Gap closed*: the share of the first protocol's distance to the "
              "paper that the protocol removes, averaged over the variants (1 = the paper's "
              "level).", "",
              "| protocol | accuracy | " + " | ".join(VARIANTS) + " | gap closed |",
              "|---|---|" + "---|" * len(VARIANTS) + "---|"]
    for row in data["rows"]:
        cells = []
        for v in VARIANTS:
            e = row["variants"].get(v)
            cells.append("–" if e is None else
                         f"{_fmt(e['mean'])} ± {_fmt(e['sd'])} [{_fmt(e['ci_low'])}, "
                         f"{_fmt(e['ci_high'])}] ({e['n']}){' ✓' if e['in_paper_interval'] else ''}")
        lines.append(f"| {row['protocol']} | {row['reading']} | " + " | ".join(cells)
                     + f" | {_fmt(row['gap_closed'], 2)} |")
    lines += ["", "## Against the paper, order and the modulated cell's lead", "",
              "Difference to the paper's mean and Welch's p against its summary statistics; "
              "the variants' order by mean; the modulated cell minus each control "
              "(Welch's p).", "",
              "| protocol | accuracy | " + " | ".join(f"{v} − paper (p)" for v in VARIANTS)
              + " | order | " + " | ".join(f"Mod − {c} (p)" for c in VARIANTS[1:]) + " |",
              "|---|---|" + "---|" * (2 * len(VARIANTS)) + ""]
    for row in data["rows"]:
        diffs = []
        for v in VARIANTS:
            e = row["variants"].get(v)
            diffs.append("–" if e is None else
                         f"{e['difference']:+.4f} ({_p(e['welch_vs_paper']['p'])})")
        leads = []
        for c in VARIANTS[1:]:
            d = row["modulated_lead"].get(c)
            leads.append("–" if d is None else f"{d['difference']:+.4f} ({_p(d['p'])})")
        lines.append(f"| {row['protocol']} | {row['reading']} | " + " | ".join(diffs)
                     + f" | {' > '.join(row['order'])} | " + " | ".join(leads) + " |")
    if checksums:
        lines += ["", "## Data", "", f"`{checksums['dir']}`, SHA-256 of each file:", "",
                  "| file | lines | sha256 |", "|---|---|---|"]
        for name, entry in checksums["files"].items():
            lines.append(f"| {name} | {entry['lines']} | `{entry['sha256']}` |")
    lines += ["", f"![test accuracy over seeds under each protocol, the paper's mean "
              f"dotted]({FIGURE})", ""]
    return "\n".join(lines)


def data_checksums(directory):
    """``{"dir": directory as given, "files": {name: {"lines", "sha256"}}}`` of the
    ``<Language>.txt`` files."""
    files = {}
    for path in sorted(Path(directory).glob("*.txt")):
        raw = path.read_bytes()
        files[path.name] = {"lines": raw.count(b"\n"), "sha256": hashlib.sha256(raw).hexdigest()}
    if not files:
        raise FileNotFoundError(f"{directory}: no <Language>.txt files")
    return {"dir": str(directory), "files": files}


def plot(data, path, metric="test_accuracy"):
    """One panel per variant: each protocol's accuracies (``metric``) over seeds as a
    histogram on bins shared by all panels, the paper's mean a black dotted line."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import MaxNLocator

    from nemot.evaluation.plots import histograms

    labels = [row["protocol"] for row in data["rows"] if row["metric"] == metric]
    every = {f"{label}/{v}": data["values"][(label, metric)][v] for label in labels
             for v in data["values"][(label, metric)]}
    edges, counts = histograms(every, bins=40)
    figure = Figure(figsize=(7.5, 1.7 * len(VARIANTS) + 1), layout="constrained")
    FigureCanvasAgg(figure)
    axes = figure.subplots(len(VARIANTS), 1, sharex=True)
    for ax, variant in zip(axes, VARIANTS):
        for k, label in enumerate(labels):
            count = counts.get(f"{label}/{variant}")
            if count is not None:
                ax.stairs(count, edges, color=f"C{k}", linewidth=1.5,
                          label=f"{label} (n={int(count.sum())})")
        ax.axvline(data["paper"][variant]["mean"], color="black", linestyle=":", linewidth=2,
                   label="paper's mean")
        ax.set_ylabel(variant)
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center", ncols=4,
                  fontsize="small", frameon=False)  # off the data
    axes[-1].set_xlabel(f"{metric} ({READINGS[metric]})")
    figure.suptitle("NAMES, Simple-LSTM: test accuracy over seeds under each protocol")
    figure.savefig(path, dpi=120)
    return path


def write(out_dir, protocols, data_dir=None):
    """Write ``report.md``, ``report.json`` and ``distributions.png`` into ``out_dir``;
    returns the markdown."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    data = compare(protocols)
    checksums = data_checksums(data_dir) if data_dir else None
    text = markdown(data, checksums)
    plot(data, out / FIGURE)
    (out / "report.md").write_text(text, encoding="utf-8")
    saved = {k: v for k, v in data.items() if k != "values"}
    saved["data"] = checksums
    (out / "report.json").write_text(json.dumps(json_safe(saved), indent=2, allow_nan=False)
                                     + "\n", encoding="utf-8")
    return text


def parse_protocols(items):
    """``["label=dir", ...]`` -> ``{label: dir}`` in order; a malformed item is an error
    naming it."""
    protocols = {}
    for item in items:
        label, sep, directory = item.partition("=")
        if not sep or not label or not directory:
            raise ValueError(f"{item!r}: expected LABEL=RUN_DIRECTORY")
        if label in protocols:
            raise ValueError(f"{item!r}: protocol {label!r} given twice")
        protocols[label] = directory
    return protocols

