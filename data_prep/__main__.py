"""``python -m data_prep`` (also ``nemot prepare-data``): tokenize raw datasets or C4
into shards (:mod:`nemot.data.prepare`; formats in :mod:`nemot.data.shards`), or write
small sample data to try every command offline (:mod:`data_prep.sample`).

Examples::

    python -m data_prep qa --dataset race --split train --data-dir data/RACE --out data/race-shards
    python -m data_prep c4 --c4-dir data/c4/en --out data/c4-shards   # train and validation
    python -m data_prep sample --out sample              # sample/c4, sample/RACE, sample/my_qa
"""

import argparse
import json
import sys

from nemot import console, vocab
from nemot.data import DataError
from nemot.data.qa.format import MQA_MODES
from nemot.ranges import COUNT_OPTION, SEED_OPTION

C4_SPLITS = ("train", "validation")


def build_parser():
    parser = argparse.ArgumentParser(prog="python -m data_prep", **console.describe(__doc__))
    add_commands(parser)
    return parser


def add_commands(parser):
    """Add the commands ``qa``, ``c4`` and ``sample`` to ``parser`` (this module's, or
    ``nemot prepare-data``)."""
    sub = parser.add_subparsers(dest="data_command", required=True)
    qa = sub.add_parser("qa", help="tokenize one dataset split into QA shards")
    qa.add_argument("--dataset", required=True, help="registry name, e.g. race, squad_v2")
    qa.add_argument("--split", required=True)
    qa.add_argument("--data-dir", required=True, help="directory with the raw files")
    qa.add_argument("--out", required=True)
    qa.add_argument("--max-text-length", type=COUNT_OPTION, default=768)
    qa.add_argument("--task-token", default=None, help="e.g. lm (default: the dataset's task)")
    qa.add_argument("--mode", default="dec", choices=vocab.MODES)
    qa.add_argument("--mqa-mode", default="label", choices=MQA_MODES)
    qa.add_argument("--shard-size", type=COUNT_OPTION, default=10000)
    c4 = sub.add_parser("c4", help="pre-tokenize a C4 directory (resumable), train and "
                                   "validation files into one shard directory")
    c4.add_argument("--c4-dir", required=True)
    c4.add_argument("--out", required=True)
    c4.add_argument("--split", choices=C4_SPLITS,
                    help="only this split (default: both; pre-training validates on the "
                         "validation shards)")
    c4.add_argument("--workers", type=COUNT_OPTION, default=None, help="processes (default: all cores)")
    c4.add_argument("--no-progress", action="store_true")
    for p in (qa, c4):
        p.add_argument("--tokenizer", default=None,
                       help="Hugging Face/KerasHub GPT-2 tokenizer directory (default: the "
                            "offline GPT-2 tokenizer)")
        p.set_defaults(func=_run)
    sample = sub.add_parser("sample", help="write small sample data in real layouts, C4 "
                                           "(OUT/c4) and RACE (OUT/RACE), to try every "
                                           "command offline")
    sample.add_argument("--out", required=True)
    sample.add_argument("--questions", type=COUNT_OPTION, default=64,
                        help="training questions of RACE and my_qa (dev and test: an eighth each)")
    sample.add_argument("--seed", type=SEED_OPTION, default=0)
    sample.set_defaults(func=_sample)


def main(argv=None):
    """Run ``python -m data_prep`` with ``argv``; returns the exit status (a bad raw file
    is one line naming its file, line and field)."""
    return console.main(build_parser(), argv)


def _c4_splits(args):
    """The splits to shard: ``--split``, else both, or train alone (said on standard
    error) when the directory has no validation files."""
    if args.split:
        return [args.split]
    from nemot.data.c4 import stream as c4

    try:
        c4.list_files(args.c4_dir, "validation")
    except DataError:
        print(f"note: {args.c4_dir} has no C4 validation files; sharding the train split "
              "only (pre-training on these shards needs data.validation_split = \"\")",
              file=sys.stderr)
        return ["train"]
    return list(C4_SPLITS)


def _run(args):
    from nemot.data import Tokenizer, prepare

    if args.data_command == "qa":
        paths = prepare.prepare_qa(
            args.dataset, args.split, args.data_dir, args.out, tokenizer=Tokenizer(args.tokenizer),
            shard_size=args.shard_size, max_text_length=args.max_text_length,
            task_token=args.task_token, mode=args.mode, mqa_mode=args.mqa_mode)
        print(json.dumps({"shards": [str(p) for p in paths]}, indent=2))
        return
    for split in _c4_splits(args):
        summary = prepare.prepare_c4(args.c4_dir, args.out, split=split, workers=args.workers,
                                     progress=not args.no_progress, path=args.tokenizer)
        print(json.dumps({"split": split, **summary}))


def _sample(args):
    from data_prep.sample import write_sample

    print(json.dumps(write_sample(args.out, args.questions, args.seed)))


if __name__ == "__main__":
    sys.exit(main())
