"""What the QA readers share beyond the raw-file parsers of :mod:`nemot.data.raw`: finding
a split's files in a dataset archive, option labels and ``.lst`` label files, the
:class:`~nemot.data.qa.format.QAExample` builders and SQuAD-format files.

Every error is a :class:`nemot.data.DataError` naming the file, the line (or key),
the field and what was expected.
"""

from pathlib import Path

from nemot.data.qa.format import QAExample
from nemot.data.raw import DataError, get, lines, read_json


def search_dirs(data_dir, tops=()):
    """``data_dir`` and, where they exist, ``data_dir/top`` for each archive top folder.

    A dataset archive unpacks to a top folder (``RACE/``, ``wikitext-2/``, ...);
    ``data_dir`` may point at that folder or at the one holding it.
    """
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise DataError(data_dir, None, "data_dir", "an existing directory")
    return [data_dir] + [data_dir / top for top in tops if (data_dir / top).is_dir()]


def find_files(data_dir, patterns, split, tops=()):
    """Files of ``split``: the first glob pattern that matches anything, under ``data_dir``
    or inside one of the archive top folders ``tops`` below it (see :func:`search_dirs`).

    Raises :class:`DataError` when no pattern matches (a split with no files).
    """
    for directory in search_dirs(data_dir, tops):
        for pattern in patterns:
            files = sorted(p for p in directory.glob(pattern) if p.is_file())
            if files:
                return files
    inside = f" (in it or in {', '.join(t + '/' for t in tops)})" if tops else ""
    raise DataError(data_dir, f"split {split!r}", "files",
                    f"at least one file matching {' or '.join(patterns)}{inside}", got="none")


def letter_label(value, labels, path, where, key):
    """0-based index of ``value`` in ``labels`` (e.g. ``"C"`` in ``["A", "B", "C", "D"]``)."""
    if value not in labels:
        raise DataError(path, where, key, f"one of the option labels {list(labels)}", got=value)
    return labels.index(value)


def read_label_file(path, count, base, n_options, examples="the examples"):
    """0-based labels from a ``.lst`` file with one label per line, numbered from ``base``;
    ``examples`` names the file of the ``count`` examples they label."""
    path = Path(path)
    if not path.is_file():
        raise DataError(path, None, "labels", f"a labels file with {count} lines", got="missing file")
    labels = []
    for line_no, line in lines(path):
        if not line.strip():
            continue
        try:
            label = int(line) - base
        except ValueError:
            label = -1
        if not 0 <= label < n_options:
            raise DataError(path, line_no, "label",
                            f"an integer in {base}..{base + n_options - 1}", got=line.strip())
        labels.append(label)
    if len(labels) != count:
        raise DataError(path, None, "labels", f"{count} labels, one per example of {examples}",
                        got=len(labels))
    return labels


def multiple_choice(dataset, id, question, options, label, passage=None, subset=None):
    """A multiple-choice :class:`QAExample` (``answers`` = the correct option's text)."""
    answers = (options[label],) if label is not None else ()
    return QAExample(id=str(id), question=question, passage=passage, options=tuple(options),
                     answers=answers, label=label, task="mqa", dataset=dataset, subset=subset)


def parts_answer(parts):
    """One gold answer from its parts: the string itself for one part, else a tuple."""
    parts = tuple(parts)
    return parts[0] if len(parts) == 1 else parts


def generative(dataset, id, question, answers, passage=None, subset=None):
    """A generative :class:`QAExample`; ``answers`` are alternatives, each a string or a
    tuple of parts (:func:`parts_answer`); duplicates are dropped, order kept."""
    return QAExample(id=str(id), question=question, passage=passage,
                     answers=tuple(dict.fromkeys(answers)), task="gqa", dataset=dataset,
                     subset=subset)


def squad_context(paragraph, where, path):
    """The passage of a SQuAD paragraph: its ``context`` field."""
    return get(paragraph, "context", path, where)


def squad_style(path, dataset, context=squad_context, parts=False):
    """Examples of a SQuAD-format file: ``data[].paragraphs[].{context, qas[]}``.

    ``context`` builds the passage from a paragraph (ROPES joins background and
    situation). Unanswerable questions (``is_impossible``) get no golds. With
    ``parts`` the ``answers`` list is one answer made of all its entries (Quoref);
    otherwise each entry is an alternative answer (SQuAD's several annotators).
    """
    document = read_json(path)
    articles = get(document, "data", path, "top level", list, "a list of articles")
    for i, article in enumerate(articles):
        paragraphs = get(article, "paragraphs", path, f"data[{i}]", list, "a list of paragraphs")
        for j, paragraph in enumerate(paragraphs):
            where = f"data[{i}].paragraphs[{j}]"
            passage = context(paragraph, where, path)
            for k, qa in enumerate(get(paragraph, "qas", path, where, list, "a list of questions")):
                qwhere = f"{where}.qas[{k}]"
                answers = get(qa, "answers", path, qwhere, list, "a list of answers")
                if not answers and not qa.get("is_impossible", False):
                    raise DataError(path, qwhere, "answers",
                                    "at least one answer unless is_impossible is true", got=[])
                texts = [get(a, "text", path, f"{qwhere}.answers[{m}]")
                         for m, a in enumerate(answers)]
                if parts and texts:
                    texts = [parts_answer(texts)]
                yield generative(dataset, get(qa, "id", path, qwhere),
                                 get(qa, "question", path, qwhere), texts, passage=passage)


