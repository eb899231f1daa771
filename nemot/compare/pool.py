"""The comparison on a thesis run (``configs/compare/thesis_pool.toml``): the same variants
on the thesis' general-training pool (or any thesis run config) with GPT-2 initialisation,
for users with a GPU and the datasets.

A config names a thesis run config and the tables merged over it::

    reproduction = "compare"
    name = "thesis_pool"
    output_dir = "runs/compare/thesis_pool"
    seeds = [0, 1, 2, 3, 4]
    run_config = "../general.toml"   # relative to this file: data, schedule, batch, loss
    gpt2 = "gpt2_base_en"            # GPT-2 weights: a KerasHub preset or HF directory
    [model] [data] [train] [schedule] [loss]   run-config values, merged over its tables
    [timing]  steps, rounds          the step-time measurement (nemot.compare.experiment)
    [variants.<name>]                mechanism (default: the name) and its options

The backbone is GPT-2 (the thesis' vanilla set, causal) with the thesis' new LM head; the
task every mechanism conditions on is the example's task token, i.e. the output blocks
of ``model.output_blocks`` (the pool's ``mqa`` and ``gqa``). ``none`` is the thesis' GPT-2
baseline, ``nemot_gate`` NeMoT itself (:func:`nemot.build_model`), the per-layer
kinds ride on GPT-2's layers (``[[model.modulation]]`` on the ``vanilla`` set) and
``ngt_block`` gates GPT-2's layer k (:class:`nemot.compare.model.ConditionedGPT2Backbone`). Every
variant trains with the run config's loss, schedule and steps through
:func:`nemot.training.loop.run`; a run reports the ♠ best validation metric
(``val_metric``), the ♣ lowest validation loss (``val_loss``), ``added_parameters`` and
``step_time_ratio``.
"""

import dataclasses
from pathlib import Path

from nemot.experiments import protocol
from nemot.compare.model import (BLOCK_OPTIONS, block_options, conditioned_gpt2, hosted_specs,
                                  mechanism_of, variant_tables)
from nemot.compare.timing import step_time_ratio
from nemot.training import run_config as rc

TABLES = ("model", "data", "train", "schedule", "loss", "timing")
TOP_LEVEL = ("run_config", "gpt2")
TIMING = {"steps": 10, "rounds": 5}


@dataclasses.dataclass(frozen=True)
class Experiment:
    """A parsed config (see the module docstring); ``tables`` are the merged run-config
    tables, ``timing`` the step-time measurement."""

    name: str
    output_dir: str
    seeds: tuple
    variants: dict  # name -> (mechanism, options)
    run_config: str
    gpt2: str
    tables: dict
    timing: dict
    source: str = "<dict>"


def from_dict(raw, path, source=None):
    """An :class:`Experiment` of the TOML dict ``raw`` read from ``path``."""
    source = source or str(path)
    keys = protocol.protocol_keys(raw, TABLES + TOP_LEVEL, source)
    base = Path(raw["run_config"])
    if not base.is_absolute():
        base = Path(path).parent / base
    timing = {**TIMING, **raw.get("timing", {})}
    if set(timing) != set(TIMING) or not all(isinstance(v, int) and v > 0
                                             for v in timing.values()):
        raise ValueError(f"{source}: [timing]: expected positive integers steps and rounds, "
                         f"got {raw.get('timing')}")
    tables = {t: dict(raw.get(t, {})) for t in TABLES if t != "timing"}
    experiment = Experiment(keys["name"], keys["output_dir"], keys["seeds"],
                            variant_tables(keys["variants"]), str(base), raw.get("gpt2"),
                            tables, timing, source)
    for variant in experiment.variants:
        run_config(experiment, variant, experiment.seeds[0])  # every variant is a valid run
    return experiment


def run_config(experiment, variant, seed, mechanism=None):
    """The :class:`nemot.training.run_config.RunConfig` of one run (of ``mechanism`` with no
    options instead, e.g. the ``none`` model a variant is timed against)."""
    where = f"{experiment.source}: [variants.{variant}]"
    name, options = mechanism_of(experiment.variants, variant, mechanism, where)
    data = rc.read_toml(experiment.run_config)
    for table, values in experiment.tables.items():
        data.setdefault(table, {}).update(values)
    data.update(name=f"{experiment.name}-{variant}-seed{seed}", seed=seed,
                model_name="nemot" if name == "nemot_gate" else "gpt2_baseline")
    if experiment.gpt2:
        data["gpt2"] = experiment.gpt2
    model = data["model"]
    try:
        model["modulation"] = [spec.to_dict() for spec in hosted_specs(name, options,
                                                                         "vanilla")]
        cfg = rc.run_config_from_dict(data, source=f"{where} over {experiment.run_config}")
        if name in BLOCK_OPTIONS:  # checks the options; NeMoT's M and Z (thesis: 12, 3)
            blocks = block_options(name, options, cfg.model.num_vanilla_layers)
        if name == "nemot_gate":
            cfg = dataclasses.replace(cfg, model=cfg.model.replace(
                num_nm_layers=blocks["nm_layers"], num_output_layers=blocks["output_layers"]))
    except ValueError as error:
        raise ValueError(f"{where}: {error}") from None
    return cfg


def gating(experiment, variant, cfg):
    """NGT's ``{"num_layers", "position"}`` of an ``ngt_block`` variant, else None."""
    name, options = experiment.variants[variant]
    if name != "ngt_block":
        return None
    return block_options(name, options, cfg.model.num_vanilla_layers)


def build(experiment, variant, cfg, mechanism=None):
    """The model of one run, with GPT-2's weights in its vanilla set when ``gpt2`` is
    set."""
    from nemot.models.gpt2 import load_vanilla_set
    from nemot.models.nemot_causal_lm import build_model

    if cfg.model_name == "nemot":
        return build_model(cfg.model, gpt2=cfg.gpt2)
    model = conditioned_gpt2(cfg.model, gating=None if mechanism else gating(
        experiment, variant, cfg))
    if cfg.gpt2:
        load_vanilla_set(model, cfg.gpt2)
    return model


def resolved_toml(experiment, variant, seed):
    """The run config of one run, as TOML (its ``config.toml``)."""
    return rc.dump_toml(run_config(experiment, variant, seed).to_dict())


def run_one(experiment, variant, seed, run_dir):
    """Train ``variant`` with ``seed`` on the run config's data into ``run_dir``; returns
    ``val_metric``, ``val_loss``, ``added_parameters`` and ``step_time_ratio``."""
    import keras

    from nemot.data.sources import check_task_tokens
    from nemot.training import loop, trainer

    cfg = run_config(experiment, variant, seed)
    source, task_tokens = trainer.data_source(cfg)
    check_task_tokens(task_tokens or {}, cfg.model)
    result = loop.run(lambda: build(experiment, variant, cfg), source, cfg.train, run_dir,
                      compile_model=lambda model: trainer.compile_model(model, cfg), seed=seed,
                      config_toml=resolved_toml(experiment, variant, seed))
    metrics = {key: result.best[key] for key in ("val_metric", "val_loss")
               if result.best.get(key) is not None}
    keras.utils.set_random_seed(seed)
    none_cfg = run_config(experiment, variant, seed, mechanism="none")
    baseline = build(experiment, variant, none_cfg, mechanism="none")
    trainer.compile_model(baseline, none_cfg)
    steps = experiment.timing["steps"]
    batches = source.train(0, cfg.train.batch_size, None).take(steps).cache()
    metrics["step_time_ratio"], _ = step_time_ratio(result.model, baseline, batches, steps,
                                                    experiment.timing["rounds"])
    metrics["added_parameters"] = result.model.count_params() - baseline.count_params()
    return metrics

