"""The ``nemot`` command line: ``nemot info``, ``pretrain``, ``finetune``,
``train-general``, ``evaluate``, ``generate``, ``prepare-data``, ``runs`` and the paper
reproductions ``ngt``, ``pals``, ``modact``, ``hypergrid``.

Each command module exposes ``add_parser(subparsers)``, which adds its
sub-command(s) with a ``func`` default taking the parsed arguments.
"""

import argparse
import importlib
import json
import sys

COMMAND_MODULES = (
    "nemot.cli",
    "nemot.training.cli",
    "nemot.evaluation.evaluate",
    "nemot.evaluation.generate_cli",
    "nemot.ngt.cli",
    "nemot.runs_cli",
    "nemot.modact.cli",
    "nemot.hypergrid.cli",
    "nemot.pals.cli",
)


def add_parser(subparsers):
    info = subparsers.add_parser(
        "info", help="print a configuration and its parameter breakdown per component")
    source = info.add_mutually_exclusive_group()
    source.add_argument("--preset", default=None, help="thesis, small or tiny (default thesis)")
    source.add_argument("--config", default=None, help="a TOML run config with a [model] table")
    info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    info.set_defaults(func=run_info)

    prepare = subparsers.add_parser(
        "prepare-data", help="tokenize raw datasets or C4 into shards (python -m data_prep)",
        add_help=False)
    prepare.add_argument("args", nargs=argparse.REMAINDER)
    prepare.set_defaults(func=lambda args: importlib.import_module("data_prep.__main__").main(args.args))


def run_info(args):
    import nemot

    if args.config:
        config = nemot.NeMoTConfig.from_file(args.config)
    else:
        config = nemot.NeMoTConfig.preset(args.preset or "thesis")
    counts = nemot.parameter_breakdown(nemot.build_model(config))
    if args.json:
        print(json.dumps({"config": config.to_dict(), "parameters": counts}, indent=2))
        return
    print("configuration")
    for key, value in config.to_dict().items():
        print(f"  {key:32s} {value}")
    print("\nparameters")
    for key, value in counts.items():
        if key == "output_blocks":
            for name, count in value.items():
                print(f"    output block {name:19s} {count:>13,}")
        else:
            print(f"  {key:32s} {value:>13,}")


def standalone(add_parser, command, argv=None):
    """Run one sub-command module on its own (``python -m nemot.pals.cli run ...``):
    ``add_parser`` adds ``command``; ``argv`` are the arguments after it."""
    parser = argparse.ArgumentParser(prog="nemot")
    add_parser(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args([command, *(sys.argv[1:] if argv is None else argv)])
    return args.func(args)


def build_parser():
    parser = argparse.ArgumentParser(prog="nemot", description=__doc__)
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        module = sys.modules[__name__] if name == __name__ else importlib.import_module(name)
        module.add_parser(subparsers)
    return parser


def main(argv=None):
    parser = build_parser()
    args = parser.parse_args(argv)
    result = args.func(args)
    return result if isinstance(result, int) else 0


if __name__ == "__main__":
    sys.exit(main())
