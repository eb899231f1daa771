"""The experiment protocol every reproduction uses: multi-seed runs of a TOML config,
with ``--set`` overrides, variants, seeds, the resolved config beside each run
and the epoch selected on a named split; :mod:`nemot.experiments.report` gives the
statistics, report and figure, :mod:`nemot.experiments.config` reads the typed settings.

**A recipe.** A reproduction package ``nemot/<package>/`` has a module ``experiment.py``
(registered in :data:`REPRODUCTIONS`) with:

- ``load(path, overrides=()) -> Experiment``: a TOML config with the top-level keys
  ``reproduction = "<package>"``, ``name``, ``output_dir``, ``seeds = [...]``, tables
  ``[variants.<name>]`` and the package's own tables; ``overrides`` are
  ``"KEY=VALUE"`` strings (``"train.epochs=1"``). The Experiment has attributes
  ``name``, ``output_dir`` and ``seeds`` (:func:`read_experiment` reads all of this;
  :class:`Experiment` is a base with them and ``variants``, to extend with the tables).
- ``variants(experiment) -> [names]``, in the paper's column order.
- ``run_one(experiment, variant, seed, run_dir) -> {metric: float}``: trains and
  evaluates one run, writing what it likes into ``run_dir``.
- ``resolved_toml(experiment, variant, seed) -> str``: the settings one run uses, as a
  TOML config of that run (:func:`resolved_toml` writes one). The protocol writes it to the
  run's ``config.toml`` before ``run_one``, and reuses a finished run only while it equals
  what the command would run now (:func:`stale_runs`).
- optionally ``CODE_VERSION = <int>`` (default 1): bumped when a change of the recipe's
  code changes what a run of the same settings computes; recorded beside each finished
  run (``version.json``), so that runs of older code are not reused unknowingly.
- optionally ``DERIVED_KEYS = ("model.vocab_size", ...)``: keys of ``config.toml`` that
  ``run_one`` adds from the data, not from the settings (not compared).
- optionally ``METRIC_KINDS = {metric: kind}`` (``"*"``: every other metric): what a
  metric is (:data:`nemot.experiments.report.KINDS`: proportion, percent, correlation,
  count, mean), which decides its interval and how it is printed; by default the kind
  follows the metric's name.
- ``PAPER = {key: {metric: number}}``: the paper's numbers, keyed by
  ``"<experiment name>/<variant>"`` or by ``"<variant>"`` alone; optionally
  ``PAPER_NOTES = {experiment name: text}`` printed under the report. An Experiment with
  an attribute ``table`` (the paper's table its variants are rows of) is looked up by that
  in place of its name, so several configs can compare with one table.
- optionally ``synthetic(experiment) -> bool``: the runs read generated data (a config
  may also say so with the top-level key ``synthetic = true``). Reports of such runs
  show no paper numbers: a number on generated data is not comparable with the paper's.
- optionally ``BASELINE = "<variant>"``: every test against it reads "X vs <baseline>",
  the difference being X minus the baseline, and the figure marks its means.
- optionally ``paper_table(output_dir, manifest) -> (markdown, data)``: the paper's own
  layout of the finished runs, added to the report (``report.json["paper_table"]``).
- optionally ``unused_settings(config) -> {key}``: the keys of a run's flat settings
  (``{"model.depth": 40, ...}``, its ``config.toml``) that its model and data do not read
  (a DenseNet's depth in an LSTM run); the report's settings table leaves them out.

``reproduction`` may also be a dotted module path, for experiments outside the package.

**Layout** of a run directory (``output_dir``)::

    runs.json                      reproduction, name, table, config, overrides, variants,
                                   seeds, synthetic
    <variant>/seed<k>/metrics.json {metric: value}, written when the run finished
    <variant>/seed<k>/config.toml  the settings the run used (:func:`resolved_toml`)
    <variant>/seed<k>/version.json {"code_version": n}, written when the run finished
    report.md, report.json         from :func:`nemot.experiments.report.write_report`
    comparison.png                 every metric's means with their 95% CIs

Example:
    >>> out = run_config("configs/modact/names_lstm.toml", seeds=[0, 1])
    >>> print(write_report(out))
"""

import copy
import csv
import dataclasses
import importlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from nemot.errors import ConfigError
from nemot.training import toml_files as rc

# reproduction name -> its experiment module (a new paper adds one line here, or calls
# register() for a module outside the package).
REPRODUCTIONS = {
    "nemot": "nemot.experiments.nemot_runs",
    "modact": "nemot.modact.experiment",
    "ngt": "nemot.ngt.experiment",
    "pals": "nemot.pals.experiment",
    "hypergrid": "nemot.hypergrid.experiment",
    "compare": "nemot.compare.experiment",
}
MANIFEST = "runs.json"
METRICS = "metrics.json"
CONFIG = "config.toml"
VERSION = "version.json"
# Keys that say how a run reports its progress, not what it computes: not compared.
UNCOMPARED = ("verbose",)
# Keys of a run's config that name the run, not a setting: its groups in a report differ
# in the other keys.
RUN_KEYS = ("seed", "name", "variant")


class StaleRuns(ConfigError):
    """Finished runs were run with other settings (or code) than the command's."""


@dataclasses.dataclass(frozen=True)
class Experiment:
    """The protocol's part of a recipe's parsed config (:func:`protocol_keys`); a recipe's
    Experiment extends it with its own tables."""

    name: str
    output_dir: str
    seeds: tuple
    variants: dict
    source: str = dataclasses.field(default="<dict>", kw_only=True)  # the file, for errors


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
    return rc.read_toml(path)


def apply_overrides(raw, overrides, tables, source="config"):
    """A copy of the TOML dict ``raw`` with ``KEY=VALUE`` overrides applied: top-level
    keys (``seeds=[0, 1]``), ``<table>.<key>`` for one of ``tables``
    (``train.epochs=1``, or a nested ``tasks.RTE.epochs=1``) or ``variants.<name>.<key>``
    (one variant's value); values are TOML, else strings."""
    raw = copy.deepcopy(raw)
    for text in overrides:
        key, equals, rest = text.partition("=")
        path = [part.strip() for part in key.split(".")]
        if not equals or not all(path):
            raise ValueError(f"{source}: override {text!r}: expected KEY=VALUE, e.g. "
                             "train.epochs=1")
        value = rc.parse_override(f"value={rest}")[1]
        if path[0] == "variants" and len(path) > 2:
            if not isinstance(raw.setdefault("variants", {}).get(path[1]), dict):
                raise ValueError(f"{source}: override {text!r}: no [variants.{path[1]}]; "
                                 f"expected one of {sorted(raw['variants'])}")
        elif len(path) > 1 and path[0] not in tables:
            raise ValueError(f"{source}: override {text!r}: expected a top-level key or one "
                             f"of {', '.join(f'{t}.*' for t in tables)}")
        target = raw
        for part in path[:-1]:  # tasks.RTE.epochs=1: nested tables
            target = target.setdefault(part, {})
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


def read_experiment(path, overrides, reproduction, tables):
    """``(raw, keys)`` of the config at ``path``: its TOML dict with the ``overrides``
    applied and the protocol's keys (:func:`protocol_keys`), checked to be a config of
    ``reproduction`` with the package's ``tables``."""
    raw = apply_overrides(read_config(path), overrides, tables, source=str(path))
    if raw.get("reproduction", reproduction) != reproduction:
        raise ValueError(f"{path}: reproduction = {raw['reproduction']!r}: expected "
                         f"{reproduction!r}")
    return raw, protocol_keys(raw, tables, source=str(path))



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
               keep_stale=False, log=print):
    """Run every (variant, seed) of the config at ``path`` not finished yet.

    A finished run (one with ``metrics.json``) is reused only while its recorded settings
    (``config.toml``, ``version.json``) equal what this command would run; otherwise the
    command stops with :class:`StaleRuns`, naming the runs and the keys that differ.

    Args:
        path: an experiment TOML.
        seeds: the seeds (default the config's ``seeds``).
        variants: variant names (default all, in the config's order).
        overrides: ``"KEY=VALUE"`` strings for the package's ``load``.
        jobs: 1 runs in this process, one after the other; N > 1 runs up to N at a time,
            each in its own Python process (``python -m nemot.experiments.cli one ...``).
        force: rerun finished runs too (each run directory is emptied first).
        keep_stale: reuse finished runs whose settings differ from this command's (the
            report shows them apart from the others, never in one mean).
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
    # Seed by seed, every variant at each: an interrupted experiment has runs of every
    # variant, with n differing by at most one.
    pairs = [(v, s) for s in seeds for v in chosen]
    finished = [(v, s) for v, s in pairs if (run_dir(out, v, s) / METRICS).exists()]
    if not force:
        stale = stale_runs(module, experiment, finished)
        if stale and not keep_stale:
            raise StaleRuns(stale_message(out, stale))
        for (variant, seed), differences in stale.items():
            log(f"  keeping {run_dir(out, variant, seed)} (--keep-stale): "
                f"{describe_differences(differences)}")
    _write_manifest(out, {
        "reproduction": reproduction_of(path), "name": experiment.name,
        "table": getattr(experiment, "table", experiment.name), "config": str(path),
        "overrides": list(overrides), "variants": names, "seeds": seeds,
        "synthetic": is_synthetic(module, experiment, path, overrides)})
    todo = [pair for pair in pairs if force or pair not in finished]
    log(f"{experiment.name}: {len(todo)} run(s) to do of {len(pairs)} "
        f"({len(chosen)} variant(s) x {len(seeds)} seed(s)) -> {out}")
    for pair in todo:
        if pair in finished:  # --force: a rerun starts afresh, not from its checkpoints
            shutil.rmtree(run_dir(out, *pair))
    if jobs <= 1:
        for variant, seed in todo:
            run_and_record(module, experiment, variant, seed, log)
    else:
        _run_processes(path, overrides, todo, jobs, log)
    return out


# ------------------------------------------------------- reuse of finished runs

def flatten(table, prefix=""):
    """``{dotted key: value}`` of a nested TOML dict (lists are values)."""
    flat = {}
    for key, value in table.items():
        if isinstance(value, dict):
            flat.update(flatten(value, f"{prefix}{key}."))
        else:
            flat[f"{prefix}{key}"] = value
    return flat


def code_version(module):
    """The recipe's ``CODE_VERSION`` (1 where it declares none)."""
    return getattr(module, "CODE_VERSION", 1)


def expected_config(module, experiment, variant, seed):
    """``{dotted key: value}`` of what a run of ``(variant, seed)`` would record now: its
    ``config.toml`` and ``code_version``."""
    text = module.resolved_toml(experiment, variant, seed)
    return {**flatten(tomllib.loads(text)), "code_version": code_version(module)}


def recorded_config(directory):
    """``{dotted key: value}`` of what the run in ``directory`` recorded (its
    ``config.toml`` and ``version.json``); None where it has no ``config.toml``."""
    path = Path(directory, CONFIG)
    if not path.exists():
        return None
    try:
        config = flatten(tomllib.loads(path.read_text(encoding="utf-8")))
    except tomllib.TOMLDecodeError as error:
        raise ValueError(f"{path}: not valid TOML: {error}") from None
    version = Path(directory, VERSION)
    config["code_version"] = (json.loads(version.read_text()).get("code_version")
                              if version.exists() else None)
    return config


def _compared(key):
    return key.rpartition(".")[2] not in UNCOMPARED


def differences(recorded, expected, derived=()):
    """``[(key, recorded value, expected value)]`` where two flattened configs differ
    (None: not there); keys of :data:`UNCOMPARED` and ``derived`` keys that only the
    recorded config has are left out."""
    if recorded is None:
        return [("config.toml", None, "the settings of the run")]
    keys = list(expected) + [k for k in recorded if k not in expected and k not in derived]
    return [(k, recorded.get(k), expected.get(k)) for k in keys
            if _compared(k) and recorded.get(k) != expected.get(k)]


def stale_runs(module, experiment, pairs):
    """``{(variant, seed): differences}`` of the finished runs among ``pairs`` whose recorded
    settings differ from what the command would run (:func:`differences`)."""
    stale = {}
    derived = tuple(getattr(module, "DERIVED_KEYS", ()))
    for variant, seed in pairs:
        found = differences(recorded_config(run_dir(experiment.output_dir, variant, seed)),
                            expected_config(module, experiment, variant, seed), derived)
        if found:
            stale[(variant, seed)] = found
    return stale


def _shown(value):
    return "not recorded" if value is None else rc.toml_value(value)


def describe_differences(found, limit=4):
    """``"train.epochs: 2 (recorded) -> 1 (now), ..."`` of :func:`differences`."""
    shown = [f"{key} = {_shown(old)} (recorded), {_shown(new)} (now)"
             for key, old, new in found[:limit]]
    more = f" and {len(found) - limit} more key(s)" if len(found) > limit else ""
    return "; ".join(shown) + more


def stale_message(out, stale):
    """The one-line refusal of :class:`StaleRuns`."""
    dirs = [str(run_dir(out, variant, seed)) for variant, seed in stale]
    keys = list(dict.fromkeys(key for found in stale.values() for key, _, _ in found))
    first = next(iter(stale.values()))
    where = dirs[0] + (f" and {len(dirs) - 1} more run(s)" if len(dirs) > 1 else "")
    return (f"{where}: finished with other settings than this command's, differing in "
            f"{', '.join(keys)} ({dirs[0]}: {describe_differences(first)}); rerun them with "
            "--force, or keep them with --keep-stale (the report shows them apart)")


def run_and_record(module, experiment, variant, seed, log=print):
    """One run through ``module.run_one``; writes its ``metrics.json`` when it finished."""
    directory = run_dir(experiment.output_dir, variant, seed)
    directory.mkdir(parents=True, exist_ok=True)
    start = time.time()
    if "keras" in sys.modules:  # runs in one process must not share graphs or layer names
        sys.modules["keras"].backend.clear_session()
    (directory / CONFIG).write_text(module.resolved_toml(experiment, variant, seed),
                                    encoding="utf-8")
    metrics = module.run_one(experiment, variant, seed, directory)
    bad = {k: v for k, v in metrics.items() if not isinstance(v, (int, float))}
    if bad:
        raise TypeError(f"{module.__name__}.run_one returned non-numeric metrics {bad}")
    (directory / VERSION).write_text(json.dumps({"code_version": code_version(module)}) + "\n")
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
            command = [sys.executable, "-m", "nemot.experiments.cli", "one", "--config", str(path),
                       "--variant", variant, "--seed", str(seed)]
            for text in overrides:
                command += ["--set", text]
            running.append(((variant, seed), subprocess.Popen(
                command, env=run_environment(jobs, os.environ, os.cpu_count()))))
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


def run_environment(jobs, environ, cpus):
    """The environment of one of ``jobs`` run processes: ``environ`` with TensorFlow's
    thread pools (``TF_NUM_INTRAOP_THREADS``, ``TF_NUM_INTEROP_THREADS``) set to this
    process's share of the ``cpus`` cores, unless ``environ`` sets them. Each process
    would otherwise start pools as large as the machine, and N processes contend for the
    cores (two runs at a time on 2 cores: 28% more steps per second with one thread each,
    measured side by side on a tiny NeMoT)."""
    share = str(max(1, (cpus or 1) // jobs))
    return {"TF_NUM_INTRAOP_THREADS": share, "TF_NUM_INTEROP_THREADS": share, **environ}


def is_synthetic(module, experiment, path, overrides=()):
    """Whether the runs of ``experiment`` read generated data: the module's
    ``synthetic(experiment)``, or the config's top-level ``synthetic = true``."""
    if getattr(module, "synthetic", None) and module.synthetic(experiment):
        return True
    flag = read_config(path).get("synthetic", False)
    for text in overrides:
        if text.partition("=")[0].strip() == "synthetic":
            flag = rc.parse_override(text)[1]
    return flag is True


def _write_manifest(out, values):
    out.mkdir(parents=True, exist_ok=True)
    manifest = out / MANIFEST
    old = json.loads(manifest.read_text()) if manifest.exists() else {}
    synthetic = values["synthetic"]
    if old and old.get("synthetic", False) != synthetic:
        raise ValueError(f"{out}: its runs read {'generated' if old.get('synthetic') else 'real'}"
                         f" data; this config reads {'generated' if synthetic else 'real'} data:"
                         " give it another output_dir")
    seeds = sorted(set(old.get("seeds", [])) | set(values["seeds"]))
    manifest.write_text(json.dumps({**values, "seeds": seeds}, indent=2) + "\n")


# ---------------------------------------------------------------- reporting

@dataclasses.dataclass
class Group:
    """The finished runs of one variant that share their settings: a row of the report.

    ``label`` is the variant, or, where the variant's runs differ in their settings, the
    variant with the keys that set this group apart (``"pals (train.epochs = 1)"``);
    ``config`` the settings they share (``{dotted key: value}``, None where the runs
    recorded none); ``runs`` their directories and ``metrics`` ``{metric: [value per
    run]}``, in seed order."""

    label: str
    variant: str
    config: dict | None
    runs: list
    metrics: dict


def collect(output_dir):
    """``(manifest, [Group])`` of the finished runs: one :class:`Group` per variant, or
    several where its runs were run with different settings (never pooled)."""
    out = Path(output_dir)
    manifest_path = out / MANIFEST
    if not manifest_path.exists():
        raise FileNotFoundError(f"{out}: no {MANIFEST}; expected a directory written by "
                                "`nemot runs --config ...`")
    manifest = json.loads(manifest_path.read_text())
    groups = []
    for variant in manifest["variants"]:
        groups += _groups(out, variant)
    if not groups:
        raise FileNotFoundError(f"{out}: no <variant>/seed*/{METRICS} yet")
    return manifest, groups


def _settings(config):
    """A run's recorded settings without the keys that name the run or only say how it
    reports progress; None where it recorded none."""
    if config is None:
        return None
    return {k: v for k, v in config.items() if k not in RUN_KEYS and _compared(k)}


def _groups(out, variant):
    found = {}
    for directory in sorted(Path(out, variant).glob("seed*"), key=_seed_number):
        path = directory / METRICS
        if not path.exists():
            continue
        try:
            metrics = json.loads(path.read_text())
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None
        config = _settings(recorded_config(directory))
        key = json.dumps(config, sort_keys=True, default=str)
        group = found.setdefault(key, Group(variant, variant, config, [], {}))
        group.runs.append(str(directory))
        for metric, value in metrics.items():
            group.metrics.setdefault(metric, []).append(float(value))
    groups = list(found.values())
    if len(groups) > 1:
        for group in groups:
            group.label = f"{variant} ({_apart(group, groups)})"
    return groups


def _apart(group, groups, limit=2):
    """What sets ``group``'s settings apart from the other groups of its variant."""
    if group.config is None:
        return "settings not recorded"
    others = [g.config or {} for g in groups if g is not group]
    keys = [k for k in group.config if any(o.get(k) != group.config[k] for o in others)]
    keys += [k for o in others for k in o if k not in group.config and k not in keys]
    shown = ", ".join(f"{k} = {_shown(group.config.get(k))}" for k in keys[:limit])
    return shown + (", ..." if len(keys) > limit else "")


def _seed_number(directory):
    digits = directory.name[len("seed"):]
    return (0, int(digits), "") if digits.isdigit() else (1, 0, directory.name)


def run_metrics(output_dir, variant):
    """The ``metrics.json`` of every finished seed of ``variant``, in seed-name order."""
    out = []
    for path in sorted(Path(output_dir, variant).glob(f"seed*/{METRICS}")):
        try:
            out.append(json.loads(path.read_text()))
        except json.JSONDecodeError as error:
            raise ValueError(f"{path}: not valid JSON ({error})") from None
    return out


# ------------------------------------------------------------------- one run

# The trainer's own columns of results.csv, not scores of the split.
TRAINER_COLUMNS = ("loss", "metric", "perplexity")


def select_epoch(run_dir, select="last", split="val"):
    """The scores of one epoch of a run on the named ``split``, read from the trainer's
    ``results.csv`` (its ``<split>_<metric>`` columns, :class:`nemot.training.callbacks.
    ResultsLogger`).

    Args:
        run_dir: the run directory.
        select: ``"last"``, or ``"best_<metric>"``: the epoch with the highest
            ``<split>_<metric>`` (the first one on ties, as the trainer's best model).
        split: the column prefix of the split that selects (and is reported).

    Returns:
        ``{metric: value}`` of that epoch without the prefix (the trainer's loss, metric
        and perplexity columns left out), and ``"epoch"``.
    """
    path = Path(run_dir, "results.csv")
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no epochs")
    prefix = f"{split}_"
    if select == "last":
        row = rows[-1]
    elif select.startswith("best_") and prefix + select[5:] in rows[0]:
        column = prefix + select[5:]
        row = max(rows, key=lambda r: float(r[column]) if r[column] != "" else float("-inf"))
    else:
        columns = [k[len(prefix):] for k in rows[0] if k.startswith(prefix)]
        raise ValueError(f"{path}: select = {select!r}: expected 'last' or 'best_<metric>' "
                         f"with <metric> one of {columns}")
    out = {key[len(prefix):]: float(value) for key, value in row.items()
           if key.startswith(prefix) and value != ""
           and key[len(prefix):] not in TRAINER_COLUMNS}
    return {**out, "epoch": float(row["epoch"])}


def resolved_toml(reproduction, name, variant, seed, tables):
    """The settings one run used, as a TOML config of that one run (the trainer writes it
    to the run's ``config.toml``): ``tables`` are ``{table: {key: value}}`` (or top-level
    values); ``None`` values are left out (TOML has no null)."""
    def present(value):
        if isinstance(value, dict):
            return {k: present(v) for k, v in value.items() if v is not None}
        return list(value) if isinstance(value, tuple) else value

    return rc.dump_toml(present({"reproduction": reproduction, "name": name,
                                 "variant": variant, "seed": seed, **tables}))
