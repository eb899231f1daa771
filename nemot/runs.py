"""Multi-seed runs of any reproduction, and their statistics (issue 18).

The papers' claims are means over 3 to 100 runs with p-values; this module runs one
config over seeds and reports every variant as mean ± SD, a 95% confidence interval
and Welch's t-test between variants, beside the paper's numbers.

**The protocol.** A reproduction package ``nemot/<package>/`` has a module
``experiment.py`` (registered in :data:`REPRODUCTIONS`) with:

- ``load(path, overrides=()) -> Experiment``: a TOML config with the top-level keys
  ``reproduction = "<package>"``, ``name``, ``output_dir``, ``seeds = [...]``, tables
  ``[variants.<name>]`` and the package's own tables; ``overrides`` are
  ``"KEY=VALUE"`` strings (``"train.epochs=1"``). The Experiment has attributes
  ``name``, ``output_dir`` and ``seeds``.
- ``variants(experiment) -> [names]``, in the paper's column order.
- ``run_one(experiment, variant, seed, run_dir) -> {metric: float}``: trains and
  evaluates one run, writing what it likes into ``run_dir``.
- ``PAPER = {key: {metric: number}}``: the paper's numbers, keyed by
  ``"<experiment name>/<variant>"`` or by ``"<variant>"`` alone; optionally
  ``PAPER_NOTES = {experiment name: text}`` printed under the report.
- optionally ``synthetic(experiment) -> bool``: the runs read generated data (a config
  may also say so with the top-level key ``synthetic = true``). Reports of such runs
  show no paper numbers: a number on generated data is not comparable with the paper's.
- optionally ``BASELINE = "<variant>"``: every test against it reads "X vs <baseline>",
  the difference being X minus the baseline, and the figure marks its means.

``reproduction`` may also be a dotted module path, for experiments outside the package.

**Layout** of a run directory (``output_dir``)::

    runs.json                      reproduction, config, overrides, variants, seeds
    <variant>/seed<k>/metrics.json {metric: value}, written when the run finished
    report.md, report.json         from :func:`write_report` (valid JSON: NaN is null)
    comparison.png                 every metric's means with their 95% CIs (and, where the
                                   runs report ``score`` and ``added_parameters``, the one
                                   against the other), from :func:`plot_report`

Example:
    >>> out = run_config("configs/modact/names_lstm.toml", seeds=[0, 1])
    >>> print(write_report(out))
"""

import copy
import dataclasses
import importlib
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scipy import stats

# reproduction name -> its experiment module (entries for "pals", "hypergrid", "ngt",
# "nemot" are added by their owners).
REPRODUCTIONS = {
    "nemot": "nemot.training.experiment",
    "modact": "nemot.modact.experiment",
    "ngt": "nemot.ngt.experiment",
    "pals": "nemot.pals.experiment",
    "hypergrid": "nemot.hypergrid.experiment",
    "compare": "nemot.compare.experiment",
}
MANIFEST = "runs.json"
METRICS = "metrics.json"
CONFIDENCE = 0.95


def register(name, module):
    """Make reproduction ``name`` runnable: ``module`` is its experiment module's path."""
    REPRODUCTIONS[name] = module


def experiment_module(name, source="config"):
    """The experiment module of reproduction ``name``: a :data:`REPRODUCTIONS` entry, or
    a dotted module path (``"mylab.experiment"``) for a reproduction outside the package."""
    if name in REPRODUCTIONS:
        return importlib.import_module(REPRODUCTIONS[name])
    if "." in name:
        try:
            return importlib.import_module(name)
        except ModuleNotFoundError as error:
            raise ValueError(f"{source}: reproduction {name!r}: no such module ({error})") from None
    raise ValueError(f"{source}: reproduction {name!r}: expected one of "
                     f"{sorted(REPRODUCTIONS)} or a dotted module path")


def read_config(path):
    """The TOML dict of an experiment config; errors name the file."""
    from nemot.training.run_config import read_toml

    return read_toml(path)


def apply_overrides(raw, overrides, tables, source="config"):
    """A copy of the TOML dict ``raw`` with ``KEY=VALUE`` overrides applied: top-level
    keys (``seeds=[0, 1]``), ``<table>.<key>`` for one of ``tables``
    (``train.epochs=1``) or ``variants.<name>.<key>`` (one variant's value); values are
    TOML, else strings."""
    from nemot.training.run_config import parse_override

    raw = copy.deepcopy(raw)
    for text in overrides:
        key, _, rest = text.partition("=")
        parts = key.strip().split(".")
        if len(parts) == 3 and parts[0] == "variants":
            variant = raw.setdefault("variants", {}).get(parts[1])
            if not isinstance(variant, dict):
                raise ValueError(f"{source}: override {text!r}: no [variants.{parts[1]}]; "
                                 f"expected one of {sorted(raw['variants'])}")
            variant[parts[2]] = parse_override(f"{parts[2]}={rest}")[1]
            continue
        path, value = parse_override(text)
        if len(path) == 2 and path[0] not in tables:
            raise ValueError(f"{source}: override {text!r}: expected a top-level key or one "
                             f"of {', '.join(f'{t}.*' for t in tables)}")
        target = raw if len(path) == 1 else raw.setdefault(path[0], {})
        target[path[-1]] = value
    return raw


def protocol_keys(raw, tables, source="config"):
    """``{name, output_dir, seeds, variants}`` of a config's TOML dict, checked: the
    protocol's top-level keys, ``[variants.<name>]`` tables and the package's ``tables``
    are the only keys; ``seeds`` defaults to ``[0]``."""
    known = {"reproduction", "name", "output_dir", "seeds", "variants", "synthetic", *tables}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise ValueError(f"{source}: unknown key(s) {unknown}; expected some of {sorted(known)}")
    if not isinstance(raw.get("synthetic", False), bool):
        raise ValueError(f"{source}: synthetic: expected true or false, got {raw['synthetic']!r}")
    for key in ("name", "output_dir"):
        if not isinstance(raw.get(key), str) or not raw[key]:
            raise ValueError(f"{source}: {key}: expected a non-empty string, got "
                             f"{raw.get(key)!r}")
    seeds = raw.get("seeds", [0])
    if not isinstance(seeds, list) or not all(isinstance(s, int) for s in seeds):
        raise ValueError(f"{source}: seeds: expected a list of integers, got {seeds!r}")
    variants = raw.get("variants", {})
    if not variants or not all(isinstance(v, dict) for v in variants.values()):
        raise ValueError(f"{source}: variants: expected one [variants.<name>] table per "
                         "variant")
    return {"name": raw["name"], "output_dir": raw["output_dir"], "seeds": tuple(seeds),
            "variants": variants}


def table(cls, values, where):
    """``cls(**values)`` for a dataclass ``cls`` and a config table; unknown keys and bad
    values raise naming ``where`` (``"configs/x.toml: [train]"``)."""
    if not isinstance(values, dict):
        raise ValueError(f"{where}: expected a table, got {values!r}")
    known = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - known)
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {unknown}; expected some of {sorted(known)}")
    try:
        return cls(**values)
    except (TypeError, ValueError) as error:
        raise ValueError(f"{where}: {error}") from None


def reproduction_of(path):
    """The ``reproduction`` key of the TOML config at ``path``."""
    raw = read_config(path)
    if not isinstance(raw.get("reproduction"), str):
        raise ValueError(f"{path}: reproduction: expected a top-level key naming the "
                         f"reproduction, one of {sorted(REPRODUCTIONS)}")
    return raw["reproduction"]


def load(path, overrides=()):
    """``(module, experiment)`` for the config at ``path``."""
    module = experiment_module(reproduction_of(path), source=str(path))
    return module, module.load(path, overrides=tuple(overrides))


def run_dir(output_dir, variant, seed):
    return Path(output_dir) / variant / f"seed{seed}"


# ------------------------------------------------------------------- running

def run_config(path, seeds=None, variants=None, overrides=(), jobs=1, force=False,
               log=print):
    """Run every (variant, seed) of the config at ``path`` not finished yet.

    Args:
        path: an experiment TOML.
        seeds: the seeds (default the config's ``seeds``).
        variants: variant names (default all, in the config's order).
        overrides: ``"KEY=VALUE"`` strings for the package's ``load``.
        jobs: 1 runs in this process, one after the other; N > 1 runs up to N at a time,
            each in its own Python process (``python -m nemot.runs_cli one ...``).
        force: rerun finished runs too (default: a run with ``metrics.json`` is kept).
        log: where progress lines go.

    Returns:
        the output directory.
    """
    module, experiment = load(path, overrides)
    names = list(module.variants(experiment))
    chosen = list(variants) if variants else names
    unknown = [v for v in chosen if v not in names]
    if unknown:
        raise ValueError(f"{path}: variants {unknown}: expected some of {names}")
    seeds = list(experiment.seeds if seeds is None else seeds)
    if not seeds:
        raise ValueError(f"{path}: seeds: expected at least one seed")
    out = Path(experiment.output_dir)
    _write_manifest(out, reproduction_of(path), experiment.name, path, overrides, names, seeds,
                    is_synthetic(module, experiment, path, overrides))
    # Seed by seed, every variant at each: an interrupted experiment has runs of every
    # variant, with n differing by at most one.
    todo = [(v, s) for s in seeds for v in chosen
            if force or not (run_dir(out, v, s) / METRICS).exists()]
    log(f"{experiment.name}: {len(todo)} run(s) to do of {len(chosen) * len(seeds)} "
        f"({len(chosen)} variant(s) x {len(seeds)} seed(s)) -> {out}")
    if jobs <= 1:
        for variant, seed in todo:
            run_and_record(module, experiment, variant, seed, log)
    else:
        _run_processes(path, overrides, todo, jobs, log)
    return out


def run_and_record(module, experiment, variant, seed, log=print):
    """One run through ``module.run_one``; writes its ``metrics.json`` when it finished."""
    directory = run_dir(experiment.output_dir, variant, seed)
    directory.mkdir(parents=True, exist_ok=True)
    start = time.time()
    if "keras" in sys.modules:  # runs in one process must not share graphs or layer names
        sys.modules["keras"].backend.clear_session()
    metrics = module.run_one(experiment, variant, seed, directory)
    bad = {k: v for k, v in metrics.items() if not isinstance(v, (int, float))}
    if bad:
        raise TypeError(f"{module.__name__}.run_one returned non-numeric metrics {bad}")
    (directory / METRICS).write_text(json.dumps({k: float(v) for k, v in metrics.items()},
                                                indent=2) + "\n")
    shown = ", ".join(f"{k} {v:.4f}" for k, v in metrics.items())
    log(f"  {variant} seed {seed}: {shown} ({time.time() - start:.0f} s)")
    return metrics


def _run_processes(path, overrides, todo, jobs, log):
    pending, running, failed = list(todo), [], []
    while pending or running:
        while pending and len(running) < jobs:
            variant, seed = pending.pop(0)
            command = [sys.executable, "-m", "nemot.runs_cli", "one", "--config", str(path),
                       "--variant", variant, "--seed", str(seed)]
            for text in overrides:
                command += ["--set", text]
            running.append(((variant, seed), subprocess.Popen(command, env=os.environ.copy())))
        time.sleep(0.2)
        for item in list(running):
            (variant, seed), process = item
            if process.poll() is not None:
                running.remove(item)
                if process.returncode:
                    failed.append(f"{variant} seed {seed} (exit {process.returncode})")
    if failed:
        raise RuntimeError(f"{path}: run(s) failed: {', '.join(failed)}")
    log(f"{len(todo)} run(s) done in separate processes")


def is_synthetic(module, experiment, path, overrides=()):
    """Whether the runs of ``experiment`` read generated data: the module's
    ``synthetic(experiment)``, or the config's top-level ``synthetic = true``."""
    from nemot.training.run_config import parse_override

    if getattr(module, "synthetic", None) and module.synthetic(experiment):
        return True
    flag = read_config(path).get("synthetic", False)
    for text in overrides:
        if text.partition("=")[0].strip() == "synthetic":
            flag = parse_override(text)[1]
    return flag is True


def _write_manifest(out, reproduction, name, path, overrides, variants, seeds, synthetic):
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / MANIFEST
    old = json.loads(manifest.read_text()) if manifest.exists() else {}
    if old and old.get("synthetic", False) != synthetic:
        raise ValueError(f"{out}: its runs read {'generated' if old.get('synthetic') else 'real'}"
                         f" data; this config reads {'generated' if synthetic else 'real'} data:"
                         " give it another output_dir")
    seeds = sorted(set(old.get("seeds", [])) | set(seeds))
    manifest.write_text(json.dumps({
        "reproduction": reproduction, "name": name, "config": str(path),
        "overrides": list(overrides), "variants": variants, "seeds": seeds,
        "synthetic": synthetic}, indent=2) + "\n")


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


# ---------------------------------------------------------------- reporting

def collect(output_dir):
    """``(manifest, {variant: {metric: [value per seed]}})`` of the finished runs."""
    out = Path(output_dir)
    manifest_path = out / MANIFEST
    if not manifest_path.exists():
        raise FileNotFoundError(f"{out}: no {MANIFEST}; expected a directory written by "
                                "`nemot runs --config ...`")
    manifest = json.loads(manifest_path.read_text())
    results = {}
    for variant in manifest["variants"]:
        for path in sorted((out / variant).glob(f"seed*/{METRICS}")):
            try:
                metrics = json.loads(path.read_text())
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}: not valid JSON ({error})") from None
            for metric, value in metrics.items():
                results.setdefault(variant, {}).setdefault(metric, []).append(float(value))
    if not results:
        raise FileNotFoundError(f"{out}: no <variant>/seed*/{METRICS} yet")
    return manifest, results


def paper_numbers(module, name, variant):
    """The paper's ``{metric: number}`` for one variant of experiment ``name``."""
    paper = getattr(module, "PAPER", {})
    return paper.get(f"{name}/{variant}", paper.get(variant, {}))


def _fmt(x, digits=4):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f"{x:.{digits}f}"


def report(output_dir):
    """Markdown tables of the finished runs: per metric, every variant's n, mean ± SD,
    95% CI and the paper's number; then every pair of variants with Welch's t-test and
    Hedges' g. Returns ``(markdown, data)``."""
    manifest, results = collect(output_dir)
    module = experiment_module(manifest["reproduction"], source=str(output_dir))
    variants = [v for v in manifest["variants"] if v in results]
    metrics = list(dict.fromkeys(m for v in variants for m in results[v]))
    lines = [f"# {manifest['name']} ({manifest['reproduction']})", "",
             f"config `{manifest['config']}`" + (
                 f", overrides `{' '.join(manifest['overrides'])}`" if manifest["overrides"]
                 else ""), ""]
    synthetic = manifest.get("synthetic", False)
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
            paper = None if synthetic else paper_numbers(module, manifest["name"],
                                                          variant).get(metric)
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
    note = getattr(module, "PAPER_NOTES", {}).get(manifest["name"])
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
    """Write ``report.md``, ``report.json`` and the figure ``comparison.png`` into
    ``output_dir``; returns the markdown."""
    text, data = report(output_dir)
    module = experiment_module(data["manifest"]["reproduction"], source=str(output_dir))
    plot_report(data, Path(output_dir, FIGURE), getattr(module, "BASELINE", None))
    text += f"\n![every metric's mean and 95% CI]({FIGURE})\n"
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
