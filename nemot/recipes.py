"""Recipes: the run and experiment configs that ship in the package, by name.

The repository's ``configs/`` is the package's ``nemot/configs`` (package data), so an
installed ``nemot`` has every config a clone has. A recipe's name is its path there
without ``.toml``: ``boolq``, ``pretrain``, ``pals/table3``, ``modact/names_lstm``.
Every ``--config`` takes a name as well as a file (:func:`config_argument`);
``nemot recipes`` lists them, each with the first line of its leading comment.
"""

import argparse
import difflib
from importlib import resources
from pathlib import Path

from nemot import console

SUFFIX = ".toml"
# The repository's own spelling of a recipe, `configs/boolq.toml`, names it too, so the
# commands the docs show run from an installed package as from a clone.
REPOSITORY_PREFIX = "configs/"
SUMMARY_WIDTH = 90


def root():
    """The folder of the packaged recipes (a path on disk for an installed package)."""
    return resources.files("nemot").joinpath("configs")


def names():
    """Every packaged recipe's name, sorted: top-level ones first, then by folder."""
    found = []

    def walk(folder, prefix):
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            elif entry.name.endswith(SUFFIX):
                found.append(prefix + entry.name[:-len(SUFFIX)])

    walk(root(), "")
    return sorted(found, key=lambda name: (name.count("/"), name))


def path(name):
    """The file of the packaged recipe ``name`` (``KeyError`` where there is none)."""
    if name not in names():
        raise KeyError(name)
    return Path(str(root().joinpath(name + SUFFIX)))


def summary(name, width=SUMMARY_WIDTH):
    """The first sentence of the recipe's leading comment (what it reproduces), cut to
    ``width`` characters at a word."""
    comment = []
    for line in path(name).read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        comment.append(line.lstrip("#").strip())
    sentence = " ".join(comment).split(". ")[0].rstrip(".")
    if len(sentence) <= width:
        return sentence
    return sentence[:width - 3].rsplit(" ", 1)[0].rstrip(",;:") + "..."


def resolve(text):
    """The file ``--config text`` means: ``text`` itself where it is a file, else the
    packaged recipe of that name (``boolq``, ``configs/boolq.toml``); a
    :class:`~nemot.errors.ConfigError` naming the nearest recipe otherwise."""
    from nemot.errors import ConfigError

    if Path(text).is_file():
        return text
    name = text.removeprefix(REPOSITORY_PREFIX).removesuffix(SUFFIX)
    known = names()
    if name in known:
        return str(path(name))
    near = difflib.get_close_matches(name, known, n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise ConfigError(f"--config {text!r}: no such file and no recipe of that name; "
                      f"{hint}`nemot recipes` lists them")


def config_argument(text):
    """``type=`` of a ``--config`` argument: :func:`resolve`, its error argparse's."""
    from nemot.errors import ConfigError

    try:
        return resolve(text)
    except ConfigError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("--config ")) from None


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "recipes", help="list the packaged configs, which --config takes by name",
        description="List the run and experiment configs that ship with nemot; "
                    "`--config NAME` of any command takes one (`nemot info --config boolq`).",
        epilog=console.ENV_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.set_defaults(func=run_recipes)


def run_recipes(args):
    listed = names()
    width = max(map(len, listed))
    for name in listed:
        print(f"{name:{width}s}  {summary(name)}")
