"""Question-answering metrics on strings (docs/spec.md section 6).

Every per-question metric takes one ``prediction`` (a string) and ``golds`` (a
string or a list of acceptable strings) and returns a float in [0, 1], the best
score over the golds. Reported scores are the mean over questions
(:func:`aggregate`), optionally split by subset (RACE middle/high, ARC
easy/challenge). Accuracy is a fraction here; the report tables print it as a
percentage like the thesis does.

Example:

>>> from nemot.evaluation import metrics
>>> metrics.f1("The Eiffel tower!", ["eiffel tower", "Paris"])
1.0
>>> metrics.score("accuracy", ["(1)", "(2)"], ["(1)", "(3)"])
0.5
"""

import collections
import functools
import re
import string

from nemot.data.qa.format import PART_SEPARATOR, join_answer

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCTUATION = frozenset(string.punctuation)


def _alternatives(golds):
    """``golds`` as a non-empty list of alternatives, each a string or a tuple of parts."""
    if isinstance(golds, str):
        return [golds]
    golds = list(golds)
    if not golds:
        raise ValueError("golds is an empty list: give at least one gold answer (use '' for 'no answer')")
    for index, gold in enumerate(golds):
        if isinstance(gold, (list, tuple)) and gold and all(isinstance(p, str) for p in gold):
            golds[index] = tuple(gold)
        elif not isinstance(gold, str):
            raise TypeError(f"golds[{index}] is {type(gold).__name__}, expected str or a "
                            "non-empty list of string parts (a multi-part answer)")
    return golds


def _gold_list(golds):
    """``golds`` as a non-empty list of strings; a multi-part answer (a tuple of parts)
    counts as its text, the parts joined as the model is trained to write them."""
    return [join_answer(gold) if isinstance(gold, tuple) else gold
            for gold in _alternatives(golds)]


def _check_prediction(prediction):
    if not isinstance(prediction, str):
        raise TypeError(f"prediction is {type(prediction).__name__}, expected str")


def normalize_answer(text):
    """SQuAD normalisation: lower-case, drop punctuation and a/an/the, collapse whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCTUATION)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def _token_f1(prediction_tokens, gold_tokens):
    # SQuAD v2 no-answer rule: if either side is empty, F1 is 1 only when both are.
    if not prediction_tokens or not gold_tokens:
        return float(prediction_tokens == gold_tokens)
    common = collections.Counter(prediction_tokens) & collections.Counter(gold_tokens)
    overlap = sum(common.values())
    if overlap == 0:
        return 0.0
    precision = overlap / len(prediction_tokens)
    recall = overlap / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1(prediction, golds):
    """SQuAD token-overlap F1 after :func:`normalize_answer`, max over golds.

    An empty (after normalisation) prediction scores 1 against an empty gold and
    0 against a non-empty one (SQuAD v2 unanswerable questions).

    Args:
        prediction: the decoded answer.
        golds: one gold string or a list of acceptable gold strings.
    """
    _check_prediction(prediction)
    prediction_tokens = normalize_answer(prediction).split()
    return max(_token_f1(prediction_tokens, normalize_answer(g).split()) for g in _gold_list(golds))


def exact_match(prediction, golds):
    """1.0 if the normalised prediction equals a normalised gold, else 0.0."""
    _check_prediction(prediction)
    normalized = normalize_answer(prediction)
    return float(any(normalized == normalize_answer(g) for g in _gold_list(golds)))


# rouge-score tokenises by lower-casing, replacing every run of characters
# outside [a-z0-9] by a space and splitting on whitespace; no stemming here.
# So punctuation and non-ASCII letters never count, and articles do count.
@functools.cache
def _rouge_scorer():
    # Imported on first use: rouge-score imports nltk and scipy.stats (about 1.2 s),
    # which a process that never scores ROUGE-L should not pay.
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)


def rouge_l(prediction, golds):
    """ROUGE-L F-measure (longest common subsequence of tokens), max over golds.

    nemot's default ROUGE-L, computed by the ``rouge-score`` package
    (``RougeScorer(["rougeL"], use_stemmer=False)``), Lin's (2004) ROUGE-L with
    ROUGE-1.5.5's tokenisation: lower-cased, only ``[a-z0-9]`` runs are tokens,
    no stemming. A prediction or gold with no such tokens scores 0 (the
    package's rule; there is no "no answer" case for ROUGE-L). The thesis'
    numbers were computed differently: see :func:`rouge_l_thesis`.
    """
    _check_prediction(prediction)
    return max(_rouge_scorer().score(g, prediction)["rougeL"].fmeasure for g in _gold_list(golds))


# --- ROUGE-L as the thesis computed it ---------------------------------------
#
# The original code scored NarrativeQA and DROP with ``rouge.Rouge(metrics=["rouge-l"])``
# of the ``rouge`` package (pltrdy/rouge, 1.0.1 on PyPI since 2021), taking
# ``get_scores(prediction, gold)[0]["rouge-l"]["f"]``, the max over golds, and 0
# where the package raised ValueError (an empty prediction or gold). Its algorithm,
# written again here from its description (no dependency for one function):
# text is split into "sentences" at every ".", each sentence's whitespace collapsed
# and split on " " (case and punctuation stay part of the words); n and m count the
# *distinct* words of prediction and gold; the LCS of every (gold sentence,
# prediction sentence) pair is reconstructed as one word sequence and the union of
# their *word sets* is the overlap; F = 2PR / (P + R + 1e-8).

def _thesis_sentences(text):
    # The package drops empty pieces before collapsing whitespace, so a piece of
    # spaces ("a. ") becomes an empty sentence whose only word is "" - kept as it did.
    return [" ".join(piece.split()) for piece in text.split(".") if piece]


def _thesis_lcs_words(reference, candidate):
    """The words of the LCS the ``rouge`` package reconstructs for two word lists.

    Which LCS is reconstructed matters, because only its distinct words count: the
    backtrack takes a match, else steps back in the reference only when that keeps a
    strictly longer LCS, else steps back in the candidate ("a a b" against reference
    "a b a" gives "a a", one distinct word).
    """
    rows, cols = len(reference), len(candidate)
    table = [[0] * (cols + 1) for _ in range(rows + 1)]
    for i in range(1, rows + 1):
        for j in range(1, cols + 1):
            if reference[i - 1] == candidate[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    words, i, j = set(), rows, cols
    while i and j:
        if reference[i - 1] == candidate[j - 1]:
            words.add(reference[i - 1])
            i, j = i - 1, j - 1
        elif table[i - 1][j] > table[i][j - 1]:
            i -= 1
        else:
            j -= 1
    return words


def _rouge_l_thesis_single(prediction, gold):
    candidate = [s.split(" ") for s in _thesis_sentences(prediction)]
    reference = [s.split(" ") for s in _thesis_sentences(gold)]
    if not candidate or not reference:
        return 0.0  # the package raises ValueError here; the original code scored 0
    overlap = set()
    for reference_sentence in reference:
        for candidate_sentence in candidate:
            overlap |= _thesis_lcs_words(reference_sentence, candidate_sentence)
    precision = len(overlap) / len({w for s in candidate for w in s})
    recall = len(overlap) / len({w for s in reference for w in s})
    return 2.0 * precision * recall / (precision + recall + 1e-8)


def rouge_l_thesis(prediction, golds):
    """ROUGE-L as the thesis computed it (the ``rouge`` package 1.0.1), max over golds.

    Case-sensitive, punctuation stays attached to words, sentences split at ".",
    distinct words counted (the whole algorithm is in the comment before
    ``_thesis_sentences``). Use it to compare with the thesis' NarrativeQA and DROP numbers;
    :func:`rouge_l` is the default. Identical strings score 1 - 5e-9 (the
    package's 1e-8 guard, kept so that every value is the package's).

    >>> round(rouge_l_thesis("The cat", "the cat"), 6), round(rouge_l("The cat", "the cat"), 6)
    (0.5, 1.0)
    >>> round(rouge_l_thesis("Mary's mother", "Mary 's mother"), 6)
    0.4
    """
    _check_prediction(prediction)
    return max(_rouge_l_thesis_single(prediction, g) for g in _gold_list(golds))


def correct(prediction, golds):
    """1.0 if the stripped prediction equals one stripped gold exactly (case-sensitive)."""
    _check_prediction(prediction)
    return float(any(prediction.strip() == g.strip() for g in _gold_list(golds)))


def accuracy(predictions, golds):
    """Fraction of exactly correct predictions (:func:`correct`), e.g. ``(2)`` vs ``(2)``.

    Args:
        predictions: list of predicted strings.
        golds: list, one entry per prediction, of a gold string or list of golds.
    """
    return mean(_per_question(correct, predictions, golds))


# --- DROP F1: the official drop_eval.py logic (Dua et al., 2019) --------------

def _is_number(text):
    try:
        float(text)
    except ValueError:
        return False
    return True


def _drop_normalize(text):
    """drop_eval ``_normalize_answer``: per token (split on space and hyphen)
    lower-case, strip punctuation unless it is a number, numbers to float form,
    drop articles, collapse whitespace."""
    parts = []
    for token in re.split(" |-", text):
        token = token.lower()
        if not _is_number(token):
            token = "".join(ch for ch in token if ch not in _PUNCTUATION)
        if _is_number(token):
            token = str(float(token))
        token = " ".join(_ARTICLES.sub(" ", token).split())
        if token.strip():
            parts.append(token)
    return " ".join(parts).strip()


def _answer_to_bags(answer):
    spans = [answer] if isinstance(answer, str) else list(answer)
    normalized = [_drop_normalize(span) for span in spans]
    return normalized, [set(span.split()) for span in normalized]


def _bag_f1(predicted_bag, gold_bag):
    intersection = len(gold_bag & predicted_bag)
    precision = intersection / len(predicted_bag) if predicted_bag else 1.0
    recall = intersection / len(gold_bag) if gold_bag else 1.0
    if precision == 0.0 and recall == 0.0:
        return 0.0
    return 2 * precision * recall / (precision + recall)


def _numbers_match(gold_bag, predicted_bag):
    """A gold span with numbers only matches a predicted span sharing one of them."""
    gold_numbers = {word for word in gold_bag if _is_number(word)}
    predicted_numbers = {word for word in predicted_bag if _is_number(word)}
    return not gold_numbers or bool(gold_numbers & predicted_numbers)


_MAX_ASSIGNMENT_SIDE = 16


def _best_assignment_total(scores):
    """Largest total of a one-to-one matching of rows to columns of ``scores``.

    The official script uses scipy's linear_sum_assignment; only the total
    enters the F1, so a dynamic programme over subsets of the smaller side
    gives the same number without scipy.
    """
    if len(scores) and len(scores[0]) > len(scores):
        scores = [list(column) for column in zip(*scores)]
    num_columns = len(scores[0]) if scores else 0
    if num_columns > _MAX_ASSIGNMENT_SIDE:
        raise ValueError(
            f"drop_f1: both the prediction and the gold have more than "
            f"{_MAX_ASSIGNMENT_SIDE} spans ({len(scores)} x {num_columns}); "
            f"this exact matcher is limited to {_MAX_ASSIGNMENT_SIDE} on the smaller side"
        )
    best = {0: 0.0}  # used-column mask -> best total so far
    for row in scores:
        step = dict(best)
        for mask, total in best.items():
            for column, value in enumerate(row):
                if not mask & (1 << column):
                    key = mask | (1 << column)
                    step[key] = max(step.get(key, 0.0), total + value)
        best = step
    return max(best.values())


def _drop_f1_single(prediction, gold):
    if isinstance(prediction, str) and not isinstance(gold, str) and len(gold) > 1:
        # A text answer to a multi-part gold is read as the parts it was trained to list.
        prediction = prediction.split(PART_SEPARATOR)
    predicted_bags = _answer_to_bags(prediction)[1]
    gold_bags = _answer_to_bags(gold)[1]
    scores = [
        [_bag_f1(p, g) if _numbers_match(g, p) else 0.0 for p in predicted_bags]
        for g in gold_bags
    ]
    f1_value = _best_assignment_total(scores) / max(len(gold_bags), len(predicted_bags))
    return round(f1_value, 2)  # the official script rounds each F1 to 2 decimals


def drop_f1(prediction, golds):
    """Official DROP F1 (drop_eval.py): bag-of-spans alignment with number matching.

    Args:
        prediction: a string or a list of predicted spans. A string scored against a
            multi-part gold is split at the ", " the targets join parts with
            (``"Traci, Gibson"`` -> ``["Traci", "Gibson"]``: the model is trained to
            write a k-part answer as its parts joined by ``", "``); against a one-part
            gold it is one span. So a prediction equal to the target scores 1.
        golds: a gold answer string, or a list of alternative gold answers, each
            a string (one span) or a list/tuple of spans (a multi-part answer:
            Quoref's answer list, DROP's ``spans``).
            DROP's gold answers are a number, a date ``"day month year"`` or
            spans (see :func:`drop_answer_strings`).

    Each predicted and gold span is normalised (numbers as floats, punctuation
    and articles removed), spans are matched one-to-one to maximise the summed
    bag-of-words F1 (a gold span containing numbers only matches predictions
    sharing a number), the total is divided by the larger number of spans,
    rounded to 2 decimals, and the best alternative gold is taken. As in
    drop_eval, alternatives whose first span is blank are skipped (0 if none is left).
    """
    golds = _alternatives(golds)
    # drop_eval skips alternatives whose first span is blank; none left scores 0.
    usable = [g for g in golds if (g if isinstance(g, str) else (list(g) or [""])[0]).strip()]
    return max((_drop_f1_single(prediction, gold) for gold in usable), default=0.0)


def drop_answer_strings(answer):
    """A DROP answer dict (``number`` / ``date`` / ``spans``) as a tuple of span strings,
    exactly as the DROP reader reads it (a date's empty parts left out: ``("1615",)``).

    >>> drop_answer_strings({"number": "", "date": {"day": "", "month": "", "year": ""}, "spans": ["x", "y"]})
    ('x', 'y')
    """
    from nemot.data.qa.readers.drop import answer_parts  # the reader's rule, in one place

    answer = answer_parts(answer, "DROP answer", None)
    return (answer,) if isinstance(answer, str) else answer


# --- registry and aggregation ------------------------------------------------

METRICS = {
    "accuracy": correct,
    "f1": f1,
    "exact_match": exact_match,
    "rouge_l": rouge_l,
    "rouge_l_thesis": rouge_l_thesis,
    "drop_f1": drop_f1,
}

# How the thesis prints each metric: accuracy as a percentage, the rest as fractions.
DISPLAY_SCALE = {"accuracy": 100.0, "f1": 1.0, "exact_match": 100.0, "rouge_l": 1.0,
                 "rouge_l_thesis": 1.0, "drop_f1": 1.0}


def get_metric(name):
    """The per-question scorer ``(prediction, golds) -> float`` registered as ``name``."""
    if name not in METRICS:
        raise ValueError(f"unknown metric {name!r}; expected one of {sorted(METRICS)}")
    return METRICS[name]


def _per_question(scorer, predictions, golds):
    predictions, golds = list(predictions), list(golds)
    if len(predictions) != len(golds):
        raise ValueError(f"{len(predictions)} predictions but {len(golds)} gold entries")
    return [scorer(p, g) for p, g in zip(predictions, golds)]


def mean(values):
    """Mean over questions; an error for an empty list (a score of nothing is undefined)."""
    values = list(values)
    if not values:
        raise ValueError("cannot average a metric over zero questions")
    return sum(values) / len(values)


def aggregate(scores, subsets=None):
    """Mean per-question ``scores`` overall (``"total"``) and per subset.

    Args:
        scores: per-question scores.
        subsets: optional list of subset names, one per score (e.g. RACE
            ``"middle"``/``"high"``, ARC ``"easy"``/``"challenge"``); ``None``
            entries belong to no subset but still count in the total.

    Returns:
        ``{"total": mean, "<subset>": mean, ...}``.

    >>> aggregate([1.0, 0.0, 1.0], ["middle", "high", "high"])
    {'total': 0.6666666666666666, 'high': 0.5, 'middle': 1.0}
    """
    scores = list(scores)
    result = {"total": mean(scores)}
    if subsets is None:
        return result
    subsets = list(subsets)
    if len(subsets) != len(scores):
        raise ValueError(f"{len(scores)} scores but {len(subsets)} subset labels")
    groups = collections.defaultdict(list)
    for value, subset in zip(scores, subsets):
        if subset is not None:
            groups[subset].append(value)
    for subset in sorted(groups):
        result[subset] = mean(groups[subset])
    return result


def score(name, predictions, golds, subsets=None):
    """Metric ``name`` averaged over questions; with ``subsets``, a dict as :func:`aggregate`.

    >>> score("f1", ["yes", ""], ["yes", ""])
    1.0
    """
    values = _per_question(get_metric(name), predictions, golds)
    if subsets is None:
        return mean(values)
    return aggregate(values, subsets)


def race_scores(predictions, golds, subsets):
    """RACE accuracy: ``{"total", "middle", "high"}`` (thesis columns Total, M, H)."""
    return _named_subsets("RACE", ("middle", "high"), predictions, golds, subsets)


def arc_scores(predictions, golds, subsets):
    """ARC accuracy: ``{"total", "easy", "challenge"}`` (thesis columns Total, Easy, Hard)."""
    return _named_subsets("ARC", ("easy", "challenge"), predictions, golds, subsets)


def _named_subsets(dataset, allowed, predictions, golds, subsets):
    subsets = list(subsets)
    for index, subset in enumerate(subsets):
        if subset not in allowed:
            raise ValueError(f"{dataset} question {index}: subset {subset!r}, expected one of {allowed}")
    return score("accuracy", predictions, golds, subsets)
