"""NAMES, the surnames of the PyTorch char-RNN tutorial (``data/names``), as distributed.

``<Language>.txt``, UTF-8, one name per line; names are folded to ASCII as the tutorial
does (NFD, combining marks dropped, only letters and `` .,;'`` kept). NAMES is neither in
TensorFlow Datasets nor on the Hugging Face hub.

Every malformed line is a :class:`nemot.data.DataError` naming the file, the line and
what was expected.

Example:
    >>> names, labels, languages = read_names("data/names")      # doctest: +SKIP
    >>> names[0], languages[labels[0]]                            # doctest: +SKIP
    ('Khoury', 'Arabic')
"""

import string
import unicodedata
from pathlib import Path

import numpy as np

from nemot.data.format import DataError
from nemot.data.readers.common import decode

LETTERS = string.ascii_letters + " .,;'"


def to_ascii(name):
    """The tutorial's ``unicodeToAscii``: ``"Ślusàrski" -> "Slusarski"``."""
    return "".join(c for c in unicodedata.normalize("NFD", name)
                   if unicodedata.category(c) != "Mn" and c in LETTERS)


def read_names(directory):
    """``(names, labels, languages)``: every name (ASCII-folded) and its language index
    into ``languages``, the sorted file stems."""
    directory = Path(directory)
    files = sorted(directory.glob("*.txt"))
    if not files:
        raise FileNotFoundError(f"{directory}: no <Language>.txt files; expected the NAMES "
                                "corpus (data/names of the PyTorch char-RNN tutorial)")
    names, labels = [], []
    for label, path in enumerate(files):
        text = decode(path, path.read_bytes())
        lines = text.split("\n")
        if lines[-1] == "":
            lines.pop()  # the final newline
        for number, line in enumerate(lines, start=1):
            name = to_ascii(line.strip())
            if not name:
                raise DataError(path, number, "name", f"a name (letters or {LETTERS[52:]!r})",
                                got=line)
            names.append(name)
            labels.append(label)
    return names, np.asarray(labels, "int32"), [p.stem for p in files]
