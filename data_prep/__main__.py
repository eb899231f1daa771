"""``python -m data_prep {qa,c4} ...``: tokenize raw datasets or C4 into shards
(:mod:`nemot.data.prepare`; formats in :mod:`nemot.data.shards`)."""

import argparse
import json
import sys

from nemot import vocab
from nemot.data import DataError, Tokenizer, prepare
from nemot.data.format import MQA_MODES



def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m data_prep", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    qa = sub.add_parser("qa", help="tokenize one dataset split into QA shards")
    qa.add_argument("--dataset", required=True, help="registry name, e.g. race, squad_v2")
    qa.add_argument("--split", required=True)
    qa.add_argument("--data-dir", required=True, help="directory with the raw files")
    qa.add_argument("--out", required=True)
    qa.add_argument("--max-text-length", type=int, default=768)
    qa.add_argument("--task-token", default=None, help="e.g. lm (default: the dataset's task)")
    qa.add_argument("--mode", default="dec", choices=vocab.MODES)
    qa.add_argument("--mqa-mode", default="label", choices=MQA_MODES)
    qa.add_argument("--shard-size", type=int, default=10000)
    c4 = sub.add_parser("c4", help="pre-tokenize a C4 directory (resumable)")
    c4.add_argument("--c4-dir", required=True)
    c4.add_argument("--out", required=True)
    c4.add_argument("--split", default="train")
    c4.add_argument("--workers", type=int, default=None, help="processes (default: all cores)")
    c4.add_argument("--no-progress", action="store_true")
    for p in (qa, c4):
        p.add_argument("--tokenizer", default=None,
                       help="Hugging Face/KerasHub GPT-2 tokenizer directory (default: offline GPT-2)")
    args = parser.parse_args(argv)
    try:
        _run(args)
    except DataError as err:
        # A bad raw file is the user's data, not a bug: one line naming file, line and field.
        print(f"python -m data_prep: {err}", file=sys.stderr)
        raise SystemExit(1) from None


def _run(args):
    if args.command == "qa":
        paths = prepare.prepare_qa(
            args.dataset, args.split, args.data_dir, args.out, tokenizer=Tokenizer(args.tokenizer),
            shard_size=args.shard_size, max_text_length=args.max_text_length,
            task_token=args.task_token, mode=args.mode, mqa_mode=args.mqa_mode)
        print(json.dumps({"shards": [str(p) for p in paths]}, indent=2))
    else:
        summary = prepare.prepare_c4(args.c4_dir, args.out, split=args.split,
                                     workers=args.workers, progress=not args.no_progress,
                                     path=args.tokenizer)
        print(json.dumps(summary))


if __name__ == "__main__":
    main()
