"""``nemot pretrain``, ``nemot finetune``, ``nemot train-general``.

Each reads a run config (``configs/*.toml``, see :mod:`nemot.training.run_config`),
applies overrides (``--set train.batch_size=4``, repeatable) and the named
flags, and trains (:func:`nemot.training.trainer.train`); an interrupted run
started again with the same ``--out`` resumes from its last checkpoint.

Example:
    nemot finetune --config configs/race.toml --set train.batch_size=8 --out checkpoints/race-8
"""

import argparse
import json
import os
import shutil
import sys
import zipfile

from nemot import console, errors, recipes
from nemot.ranges import COUNT_OPTION, SEED_OPTION

COMMANDS = {
    "pretrain": ("pretrain", "pre-train NeMoT on C4 (thesis §3.5.1)"),
    "finetune": ("finetune", "fine-tune on one QA dataset (thesis Table 3.3)"),
    "train-general": ("general", "general training on the multi-format pool (thesis §3.5.3)"),
}

EPILOG = """\
config keys often set (--set KEY=VALUE, TOML values, repeatable):
  model.preset=tiny           the model's sizes: thesis, small or tiny (or --preset)
  train.init_from=PATH        a saved .keras model to start from (empty: none; or --init-from)
  train.steps_per_epoch=N     optimizer steps per epoch (fine-tuning: 0 = one pass)
  train.verbose=2             Keras' progress: 1 a bar, 2 one line per epoch, 0 none
  data.validation_split=      empty: no validation
every key: docs/training.md and nemot/training/run_config.py.
"""


def add_parser(subparsers):
    """Add the three training commands to an ``argparse`` sub-parser set.

    Each sets ``func`` to a callable taking the parsed ``args`` and returning
    an exit status.
    """
    for command, (kind, help_text) in COMMANDS.items():
        parser = subparsers.add_parser(command, help=help_text, description=help_text,
                                       epilog=EPILOG + console.ENV_HELP,
                                       formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.add_argument("--config", required=True, type=recipes.config_argument,
                            help="run config: a recipe name (nemot recipes) or a TOML file")
        parser.add_argument("--set", dest="overrides", action="append", default=[],
                            metavar="KEY=VALUE",
                            help="override a config value, e.g. train.batch_size=4 (repeatable)")
        parser.add_argument("--preset", help="model sizes: thesis, small or tiny "
                                             "(config key model.preset)")
        parser.add_argument("--model", help="model to train: nemot or gpt2_baseline "
                                            "(config key model_name)")
        parser.add_argument("--gpt2", help="GPT-2 weights for the vanilla set: a KerasHub "
                                           "preset name (downloaded) or directory, a Hugging "
                                           "Face GPT-2 directory, or 'none' for random "
                                           "weights (config key gpt2)")
        parser.add_argument("--strategy",
                            help="distribution: default (one device); TensorFlow: mirrored "
                                 "(all GPUs of this host) or multi-worker (hosts from "
                                 "TF_CONFIG); JAX: data-parallel (all devices of this host) "
                                 "or multi-host (hosts from the cluster's environment, "
                                 "docs/training.md)")
        parser.add_argument("--init-from", metavar="PATH",
                            help="a saved .keras model to start from, or a run's output "
                                 "directory (its model_last.keras); 'none' starts from the "
                                 "initial weights (config key train.init_from)")
        parser.add_argument("--out", help="output directory (default checkpoints/<run name>)")
        parser.add_argument("--data-dir", help="data directory (config key data.dir)")
        parser.add_argument("--epochs", type=COUNT_OPTION, help="config key train.epochs")
        parser.add_argument("--batch-size", type=COUNT_OPTION, help="global batch size (train.batch_size)")
        parser.add_argument("--seed", type=SEED_OPTION, help="config key seed")
        parser.set_defaults(func=lambda args, kind=kind: run(args, kind))


def _flag_overrides(args):
    gpt2 = "" if args.gpt2 is not None and args.gpt2.lower() == "none" else args.gpt2
    init_from = args.init_from
    if init_from is not None and init_from.lower() == "none":
        init_from = ""
    elif init_from and os.path.isdir(init_from):  # a run's output directory
        from nemot.training.callbacks import MODEL_FILES

        init_from = os.path.join(init_from, MODEL_FILES["last"])
    flags = {"model.preset": args.preset, "model_name": args.model, "gpt2": gpt2,
             "train.init_from": init_from,
             "train.strategy": args.strategy, "data.dir": args.data_dir,
             "train.epochs": args.epochs, "train.batch_size": args.batch_size, "seed": args.seed}
    # Strings are written as TOML strings so that any path survives parsing.
    return [f"{key}={value}" if isinstance(value, int) else f"{key}={_toml_string(value)}"
            for key, value in flags.items() if value is not None]


def _toml_string(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


# The task class each model_name saves (a .keras file's config.json names it). A saved model
# of the other class is refused as a start: loading by weight name would fill the GPT-2
# baseline's layers with NeMoT's vanilla set, or the reverse, without a word.
SAVED_CLASSES = {"nemot": "NeMoTCausalLM", "gpt2_baseline": "GPT2BaselineCausalLM"}


def saved_class(path):
    """The class name in the ``.keras`` file's ``config.json`` (None where there is none)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return json.loads(archive.read("config.json")).get("class_name")
    except (zipfile.BadZipFile, KeyError, ValueError, AttributeError):
        return None


def check_inputs(cfg):
    """Refuse, naming the config key, a run whose inputs do not exist, before anything is
    built: ``data.dataset`` / ``data.datasets`` not in the registry, a missing
    ``train.init_from`` or one of the other model (:data:`SAVED_CLASSES`), a missing local
    ``data.dir``."""
    from nemot.data.qa import registry

    for key, names in (("dataset", [cfg.data.dataset] if cfg.data.dataset else []),
                       ("datasets", cfg.data.datasets)):
        unknown = [name for name in names if name not in registry.DATASETS]
        if unknown:
            raise errors.ConfigError(f"{cfg.source}: data.{key}: unknown dataset(s) {unknown}; "
                                     f"known: {', '.join(registry.names())}")
    init_from = cfg.train.init_from
    if init_from and not os.path.isfile(init_from):
        raise errors.ConfigError(
            f"{cfg.source}: train.init_from = {init_from!r}: no such file. It is the saved "
            "model the run starts from (a pre-training run's model_last.keras): run `nemot "
            "pretrain` first, point it at a .keras file with --set train.init_from=PATH, or "
            "start without one: --set train.init_from=")
    saved = saved_class(init_from) if init_from else None
    other = {cls: name for name, cls in SAVED_CLASSES.items() if name != cfg.model_name}
    if saved in other:
        raise errors.ConfigError(
            f"{cfg.source}: train.init_from = {init_from!r} is a saved {saved}, a "
            f"model_name = {other[saved]!r} model; this run trains model_name = "
            f"{cfg.model_name!r} and starts from a saved {SAVED_CLASSES[cfg.model_name]}. The "
            "GPT-2 baseline starts from GPT-2's own weights (gpt2, --gpt2; "
            "configs/baseline/gpt2_medium.toml) or a run of its own")
    data_dir = cfg.data.dir
    if data_dir and cfg.data.source == "files" and "://" not in data_dir \
            and not os.path.isdir(data_dir):
        raise errors.ConfigError(f"{cfg.source}: data.dir = {data_dir!r}: no such directory "
                                 "(set it with --data-dir DIR)")


def download_keys(cfg):
    """The config keys whose values make this run download, each with its local form."""
    keys = []
    if cfg.gpt2 and not os.path.isdir(cfg.gpt2):
        keys.append("gpt2 (--gpt2 DIR, a GPT-2 checkpoint directory; or --gpt2 none)")
    if cfg.data.dir is None and cfg.kind != "pretrain":
        keys.append("data.dir (--data-dir DIR, the dataset's raw files)")
    return keys


def run(args, kind):
    """Load the config, check it is a ``kind`` run and its paths exist, train; returns the
    exit status."""
    from nemot.training.run_config import load_run_config

    cfg = load_run_config(args.config, list(args.overrides) + _flag_overrides(args))
    if cfg.kind != kind:
        command = next(c for c, (k, _) in COMMANDS.items() if k == cfg.kind)
        raise errors.ConfigError(f"{args.config} is a {cfg.kind!r} run; use `nemot {command}`")
    check_inputs(cfg)
    from nemot.training import trainer
    from nemot.training.callbacks import TrainingDiverged

    out_dir = args.out or trainer.default_out_dir(cfg)
    fresh = not os.path.exists(out_dir)
    try:
        with errors.downloads(*download_keys(cfg)):
            result = trainer.train(cfg, out_dir=out_dir)
    except TrainingDiverged as error:
        raise errors.UserError(str(error)) from error
    except BaseException:
        if fresh:  # a run that failed before writing anything leaves no folder behind
            remove_if_empty(out_dir)
        raise
    print(f"done: step {result.step}, epochs {result.epochs_done}; best {result.best}; "
          f"output in {result.out_dir}")
    return 0


def remove_if_empty(path):
    """Remove the folder ``path`` where it and its folders hold no file."""
    if os.path.isdir(path) and not any(names for _, _, names in os.walk(path)):
        shutil.rmtree(path)


def main(argv=None):
    """Stand-alone entry point (``python -m nemot.training.cli finetune ...``)."""
    return console.standalone(add_parser, argv)


if __name__ == "__main__":
    sys.exit(main())
