"""``nemot modact``: the modulated-activation reproduction's own command.

Training and reports go through the multi-seed runner (``nemot runs --config
configs/modact/<table>.toml``, ``nemot runs report DIR``); this command prints the
parameter counts of the paper's Tables 1 and 3 next to ours (``params``) and compares
NAMES runs under several protocols with the paper's Table 4 (``protocols``).

Example::

    nemot modact params
    nemot modact protocols --out results/modact/names_lstm_protocols \
        shipped=results/modact/names_lstm split_names=runs/names_split_names
"""

import json

from nemot import console


def add_parser(subparsers):
    """Add ``modact`` (with ``params``) to an argparse subparsers object."""
    parser = subparsers.add_parser(
        "modact", help="modulated activations (*Context Dependent Modulation of Activation Function*): parameter counts; train with "
                       "`nemot runs --config configs/modact/...`",
        **console.describe(__doc__))
    commands = parser.add_subparsers(dest="modact_command", required=True)
    params = commands.add_parser("params", help="our parameter counts beside the paper's "
                                 "Tables 1 and 3")
    params.add_argument("--json", action="store_true", help="print JSON instead of a table")
    protocols = commands.add_parser(
        "protocols", help="NAMES runs under several protocols beside the paper's Table 4: "
                          "report.md, report.json, distributions.png")
    protocols.add_argument("protocols", nargs="+", metavar="LABEL=RUN_DIRECTORY",
                           help="output directories of `nemot runs` on "
                                "configs/modact/names_lstm.toml; the first is the reference")
    protocols.add_argument("--out", required=True, help="where the report goes")
    protocols.add_argument("--data", help="the NAMES files' directory: its files' SHA-256 "
                                          "go into the report, the path as given")
    parser.set_defaults(func=main_modact)
    return parser


def main_modact(args):
    """Run one parsed ``nemot modact`` command; returns the exit status."""
    if args.modact_command == "protocols":
        from nemot.modact import protocols

        print(protocols.write(args.out, protocols.parse_protocols(args.protocols), args.data))
        return 0
    from nemot.modact.models import parameter_table

    rows = parameter_table()
    if args.json:
        print(json.dumps([dict(zip(("table", "model", "ours", "paper", "note"), row))
                          for row in rows], indent=2))
        return 0
    print(f"{'table':8s} {'model':32s} {'ours':>11s} {'paper':>11s}  note")
    for table, model, ours, paper, note in rows:
        print(f"{table:8s} {model:32s} {ours:>11,} {paper:>11,.0f}  {note}")
    return 0
