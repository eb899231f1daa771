"""``nemot pretrain``, ``nemot finetune``, ``nemot train-general``.

Each reads a run config (``configs/*.toml``, see :mod:`nemot.training.run_config`),
applies overrides (``--set train.batch_size=4``, repeatable) and the named
flags, and trains (:func:`nemot.training.trainer.train`); an interrupted run
started again with the same ``--out`` resumes from its last checkpoint.

Example:
    nemot finetune --config configs/race.toml --set train.batch_size=8 --out checkpoints/race-8
"""

import argparse
import sys

from nemot.models.registry import MODEL_NAMES
from nemot.training.distributed import STRATEGIES

COMMANDS = {
    "pretrain": ("pretrain", "pre-train NeMoT on C4 (thesis §3.5.1)"),
    "finetune": ("finetune", "fine-tune on one QA dataset (thesis Table 3.3)"),
    "train-general": ("general", "general training on the multi-format pool (thesis §3.5.3)"),
}


def add_parser(subparsers):
    """Add the three training commands to an ``argparse`` sub-parser set.

    Each sets ``func`` to a callable taking the parsed ``args`` and returning
    an exit status.
    """
    for command, (kind, help_text) in COMMANDS.items():
        parser = subparsers.add_parser(command, help=help_text, description=help_text)
        parser.add_argument("--config", required=True, help="run config TOML (configs/*.toml)")
        parser.add_argument("--set", dest="overrides", action="append", default=[],
                            metavar="KEY=VALUE",
                            help="override a config value, e.g. train.batch_size=4 (repeatable)")
        parser.add_argument("--model", choices=MODEL_NAMES,
                            help="model to train (config key model_name)")
        parser.add_argument("--gpt2", help="GPT-2 weights for the vanilla set: KerasHub preset "
                                           "name or directory, or a Hugging Face GPT-2 directory")
        parser.add_argument("--strategy", choices=STRATEGIES,
                            help="distribution: one device, all GPUs of this host, or several "
                                 "hosts from TF_CONFIG")
        parser.add_argument("--out", help="output directory (default checkpoints/<run name>)")
        parser.add_argument("--data-dir", help="data directory (config key data.dir)")
        parser.add_argument("--epochs", type=int, help="config key train.epochs")
        parser.add_argument("--batch-size", type=int, help="global batch size (train.batch_size)")
        parser.add_argument("--seed", type=int, help="config key seed")
        parser.set_defaults(func=lambda args, kind=kind: run(args, kind))


def _flag_overrides(args):
    flags = {"model_name": args.model, "gpt2": args.gpt2, "train.strategy": args.strategy,
             "data.dir": args.data_dir, "train.epochs": args.epochs,
             "train.batch_size": args.batch_size, "seed": args.seed}
    # Strings are written as TOML strings so that any path survives parsing.
    return [f"{key}={value}" if isinstance(value, int) else f"{key}={_toml_string(value)}"
            for key, value in flags.items() if value is not None]


def _toml_string(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def run(args, kind):
    """Load the config, check it is a ``kind`` run, train; returns the exit status."""
    from nemot.training import trainer
    from nemot.training.callbacks import TrainingDiverged
    from nemot.training.run_config import RunConfigError, load_run_config

    try:
        cfg = load_run_config(args.config, list(args.overrides) + _flag_overrides(args))
    except RunConfigError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if cfg.kind != kind:
        command = next(c for c, (k, _) in COMMANDS.items() if k == cfg.kind)
        print(f"error: {args.config} is a {cfg.kind!r} run; use `nemot {command}`",
              file=sys.stderr)
        return 2
    try:
        result = trainer.train(cfg, out_dir=args.out)
    except TrainingDiverged as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print(f"done: step {result.step}, epochs {result.epochs_done}; best {result.best}; "
          f"output in {result.out_dir}")
    return 0


def main(argv=None):
    """Stand-alone entry point (``python -m nemot.training.cli finetune ...``)."""
    parser = argparse.ArgumentParser(prog="nemot")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
