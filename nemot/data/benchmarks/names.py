"""NAMES, the surnames of the PyTorch char-RNN tutorial (``data/names``), as distributed.

``<Language>.txt``, UTF-8, one name per line; names are folded to ASCII as the tutorial
does (NFD, combining marks dropped, only letters and `` .,;'`` kept; another ``alphabet``
keeps other characters, ``None`` every one that is not a combining mark). NAMES is neither
in TensorFlow Datasets nor on the Hugging Face hub.

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

from nemot.data.raw import DataError, decode

LETTERS = string.ascii_letters + " .,;'"


def strip_accents(name):
    """NFD with the combining marks dropped: ``"Ślusàrski" -> "Slusarski"``; a character
    without a decomposition stays (``"Groß" -> "Groß"``)."""
    return "".join(c for c in unicodedata.normalize("NFD", name)
                   if unicodedata.category(c) != "Mn")


def to_ascii(name, alphabet=LETTERS):
    """The tutorial's ``unicodeToAscii``: accents stripped, characters outside
    ``alphabet`` dropped (``"Ślusàrski" -> "Slusarski"``, ``"Groß" -> "Gro"``)."""
    return "".join(c for c in strip_accents(name) if c in alphabet)


def _expected(alphabet):
    if alphabet == LETTERS:
        return f"a name (letters or {LETTERS[52:]!r})"
    return f"a name (characters of {alphabet!r})" if alphabet else "a name"


def read_names(directory, alphabet=LETTERS):
    """``(names, labels, languages)``: every name (folded to ``alphabet``; ``None``: only
    its accents stripped) and its language index into ``languages``, the sorted file
    stems."""
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
            name = line.strip()
            name = strip_accents(name) if alphabet is None else to_ascii(name, alphabet)
            if not name:
                raise DataError(path, number, "name", _expected(alphabet), got=line)
            names.append(name)
            labels.append(label)
    return names, np.asarray(labels, "int32"), [p.stem for p in files]
