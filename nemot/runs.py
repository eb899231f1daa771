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

``reproduction`` may also be a dotted module path, for experiments outside the package.

**Layout** of a run directory (``output_dir``)::

    runs.json                      reproduction, config, overrides, variants, seeds
    <variant>/seed<k>/metrics.json {metric: value}, written when the run finished
    report.md, report.json         from :func:`write_report`

Example:
    >>> out = run_config("configs/modact/names_lstm.toml", seeds=[0, 1])
    >>> print(write_report(out))
"""

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
    keys (``seeds=[0, 1]``) or ``<table>.<key>`` for one of ``tables``
    (``train.epochs=1``); values are TOML, else strings."""
    from nemot.training.run_config import parse_override

    raw = {k: dict(v) if isinstance(v, dict) else v for k, v in raw.items()}
    for text in overrides:
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
        key, value = parse_override(text)
        if key == ("synthetic",):
            flag = value
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
        pairs = [(a, b) for a, b in itertools.combinations(variants, 2)
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


def write_report(output_dir):
    """Write ``report.md`` and ``report.json`` into ``output_dir``; returns the markdown."""
    text, data = report(output_dir)
    Path(output_dir, "report.md").write_text(text + "\n")
    Path(output_dir, "report.json").write_text(json.dumps(data, indent=2, default=str) + "\n")
    return text
