"""NeMoT run configs over seeds and variants, in the protocol of ``nemot runs``
(:mod:`nemot.experiments.protocol`): the thesis' runs with everything else equal, e.g. NeMoT's gate
against PALs, HyperGrid or a modulated activation on the same QA data.

An experiment is a TOML file::

    reproduction = "nemot"
    name = "race_modulation"
    output_dir = "runs/nemot/race_modulation"
    seeds = [0, 1, 2]
    run_config = "configs/race.toml"        # a thesis run config (nemot.training.run_config)
    overrides = ["data.dir=\\"data/RACE\\""]   # applied to it, optional

    [variants.thesis]                       # tables of run-config values per variant
    [variants.pals.model]
    modulation = [{ kind = "pals", sets = ["vanilla"] }]

Each run trains ``run_config`` with the variant's values and the seed
(:func:`nemot.training.trainer.train`) and reports the ♠ best validation metric and the
♣ lowest validation loss.
"""

import dataclasses
from pathlib import Path

from nemot import recipes
from nemot.experiments import protocol
from nemot.training import run_config as rc
from nemot.training.trainer import train

TABLES = ("run_config", "overrides")
# The thesis' numbers the shipped experiments compare with (Table 3.4, best validation).
PAPER = {"race_modulation/thesis": {"val_metric": 0.6002}}
# The ♠ metric (accuracy, F1, ROUGE-L) is a fraction.
METRIC_KINDS = {"val_metric": "proportion"}


@dataclasses.dataclass(frozen=True)
class Experiment:
    name: str
    output_dir: str
    seeds: tuple
    run_config: str
    overrides: tuple
    variants: dict
    source: str


def load(path, overrides=()):
    """The experiment at ``path``; ``overrides`` as ``nemot runs --set``."""
    raw, keys = protocol.read_experiment(path, overrides, "nemot", TABLES)
    if not isinstance(raw.get("run_config"), str):
        raise ValueError(f"{path}: run_config: expected the path of a thesis run config")
    # A file (from here, else beside this config), or a recipe by name (nemot.recipes).
    base = Path(path).parent / raw["run_config"]
    if Path(raw["run_config"]).exists() or not base.is_file():
        base = recipes.resolve(raw["run_config"])
    experiment = Experiment(run_config=str(base), overrides=tuple(raw.get("overrides", ())),
                            source=str(path), **keys)
    for variant in experiment.variants:
        run_config(experiment, variant, experiment.seeds[0])  # every variant is a valid run
    return experiment


def variants(experiment):
    return list(experiment.variants)


def run_config(experiment, variant, seed):
    """The :class:`nemot.training.run_config.RunConfig` of one run."""
    data = rc.apply_overrides(rc.read_toml(experiment.run_config), experiment.overrides)
    for table, values in experiment.variants[variant].items():
        if not isinstance(values, dict):
            raise ValueError(f"{experiment.source}: variants.{variant}.{table}: expected a "
                             "table of run-config values (e.g. [variants.x.model])")
        data.setdefault(table, {}).update(values)
    data.update(name=f"{experiment.name}-{variant}-seed{seed}", seed=seed)
    return rc.run_config_from_dict(data, source=f"{experiment.source} [variants.{variant}]")


def resolved_toml(experiment, variant, seed):
    """The run config of one run, as TOML (its ``config.toml``; the trainer writes the same
    to ``run_config.toml``)."""
    return rc.dump_toml(run_config(experiment, variant, seed).to_dict())


def run_one(experiment, variant, seed, run_dir):
    result = train(run_config(experiment, variant, seed), out_dir=str(run_dir))
    return {key: result.best[key] for key in ("val_metric", "val_loss")
            if result.best.get(key) is not None}
