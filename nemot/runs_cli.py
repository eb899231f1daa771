"""``nemot runs``: kept here for existing code; the command lives in
:mod:`nemot.experiments.cli`."""

from nemot.experiments.cli import add_parser, main, main_runs

__all__ = ["add_parser", "main", "main_runs"]

if __name__ == "__main__":
    raise SystemExit(main())
