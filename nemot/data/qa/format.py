"""The unified text-to-text QA format and its targets (thesis §3.3.1, docs/spec.md sections 3-4).

One :class:`QAExample` type for every dataset and one :class:`Formatter` that
turns it into model inputs::

    <p1> passage <q> question (1) option (2) option ... <sep> answer </s>

``token_ids = [<cls>, <mode>, <task>] + text_ids``; the targets are per text
position (length ``len(text_ids)``) with :data:`nemot.vocab.IGNORE_ID` where a
position does not count:

- ``task_targets`` (losses L1 and L3): generation: from the ``<sep>`` position
  ``t`` on, target ``text[t + 1]`` for every answer token and the final
  ``</s>``; multiple choice in label mode: one target, the option token ``(k)``
  at the ``<sep>`` position, no ``</s>``.
- ``lm_targets`` (loss L2): next-token targets over the example's own input
  (passage, question, options, answer); in label mode the appended label is
  excluded (no target at ``<sep>``).
"""

import dataclasses
from dataclasses import dataclass

from nemot import vocab

TASKS = ("mqa", "gqa")
MQA_MODES = ("label", "generate")
# Room left for the answer when the prompt alone is cut for generation at evaluation.
DEFAULT_MAX_ANSWER_LENGTH = 32
# The parts of a multi-part answer (a Quoref answer list, DROP ``spans``) are trained on as
# one text, joined in order by this separator; metrics split a prediction on it again.
PART_SEPARATOR = ", "


def join_answer(answer):
    """A gold answer as the text after ``<sep>``: stripped, its parts joined by ``", "``.

    ``answer`` is a string or a tuple of parts (a multi-part answer). Whitespace at the ends
    is stripped because the answer is tokenised apart from the prompt: ``" Tom"`` would
    otherwise become ``ĠTom`` instead of ``Tom`` (and ``"\nTom"`` would add token 198).

    >>> join_answer(("Traci ", "Gibson"))
    'Traci, Gibson'
    """
    if isinstance(answer, str):
        return answer.strip()
    return PART_SEPARATOR.join(part.strip() for part in answer)


def clean_answer(answer):
    """``answer`` with its text (or each part's) stripped, its structure kept."""
    return answer.strip() if isinstance(answer, str) else tuple(p.strip() for p in answer)


@dataclass(frozen=True)
class QAExample:
    """One question of any dataset, before tokenisation.

    Args:
        id: identifier unique within the dataset split.
        question: question text (the WinoGrande sentence, the PIQA goal, ...).
        passage: context text, or None for datasets without one (ARC, OBQA, ...).
        options: answer options of a multiple-choice question (empty for generation).
        answers: all gold answers (for metrics), alternatives of each other; each is a
            string or, for an answer made of several parts (Quoref, DROP ``spans``), a
            tuple of its parts in order; ``()`` for an unanswerable SQuAD v2 question;
            for multiple choice the text of the correct option.
        label: 0-based index of the correct option, or None (generation, unlabelled test).
        task: ``"mqa"`` (multiple choice) or ``"gqa"`` (generative QA).
        dataset: registry name, e.g. ``"race"``.
        subset: e.g. ``"middle"``/``"high"`` (RACE), ``"easy"``/``"challenge"`` (ARC).
        answer: the answer trained on; defaults to ``answers[0]`` (``""`` when unanswerable).
        group: set on the examples that :func:`expand_answers` made from one question
            whose answers are alternatives of which training takes one per epoch
            (NarrativeQA); the question's id. None otherwise.

    Example:
        >>> ex = QAExample(id="q1", passage="Tom has a cat.", question="Who has a cat?",
        ...                answers=("Tom",), task="gqa", dataset="squad_v2")
        >>> ex.target_answer
        'Tom'
    """

    id: str
    question: str
    passage: str | None = None
    options: tuple = ()
    answers: tuple = ()
    label: int | None = None
    task: str = "gqa"
    dataset: str = ""
    subset: str | None = None
    answer: str | tuple | None = None
    group: str | None = None

    def __post_init__(self):
        for answer in self.answers + ((self.answer,) if self.answer is not None else ()):
            if not (isinstance(answer, str) or (isinstance(answer, tuple) and answer
                                                 and all(isinstance(p, str) for p in answer))):
                raise ValueError(f"example {self.id!r}: an answer is a string or a non-empty "
                                 f"tuple of string parts, got {answer!r}")
        if self.task not in TASKS:
            raise ValueError(f"example {self.id!r}: task must be one of {TASKS}, got {self.task!r}")
        if self.label is not None and not 0 <= self.label < len(self.options):
            raise ValueError(f"example {self.id!r}: label {self.label} outside the "
                             f"{len(self.options)} options")
        if len(self.options) > len(vocab.OPTION_IDS):
            raise ValueError(f"example {self.id!r}: {len(self.options)} options; the vocabulary "
                             f"has option tokens (1)..({len(vocab.OPTION_IDS)}) only")

    @property
    def target_answer(self):
        """The answer text trained on (:func:`join_answer`; ``""`` when unanswerable)."""
        if self.answer is not None:
            return join_answer(self.answer)
        return join_answer(self.answers[0]) if self.answers else ""


def expand_answers(examples, one_per_epoch=False):
    """One training example per gold answer (docs/spec.md §4), ids ``{id}#{k}``.

    A multi-part answer is one answer (one example, its parts joined). With
    ``one_per_epoch`` the examples of a question share ``group`` = the question's id,
    and the pipelines train on one of them per epoch (NarrativeQA: "answer1 or
    answer2"); otherwise every answer is trained on in every epoch (SQuAD).
    Multiple-choice and single-answer examples pass through unchanged; golds stay complete.
    """
    for ex in examples:
        if ex.task == "gqa" and len(ex.answers) > 1 and ex.answer is None:
            group = ex.id if one_per_epoch else None
            for k, answer in enumerate(ex.answers):
                yield dataclasses.replace(ex, id=f"{ex.id}#{k}", answer=answer, group=group)
        else:
            yield ex


@dataclass(frozen=True)
class FormattedExample:
    """Model inputs, targets and golds of one example; all id lists are plain ints.

    ``token_ids`` = aux tokens + text ids (training layout, answer included);
    ``task_targets`` and ``lm_targets`` have the text length; ``prompt_ids`` =
    aux tokens + prompt up to and including ``<sep>`` (evaluation layout, cut
    to leave room for ``max_answer_length`` generated tokens); ``golds`` are the
    answers a metric compares a decoded prediction with (strings, or tuples of
    parts for multi-part answers); ``group`` as :class:`QAExample`.
    """

    id: str
    dataset: str
    subset: str | None
    task: str
    text: str
    token_ids: list
    task_targets: list
    lm_targets: list
    prompt_ids: list
    golds: tuple
    label: int | None = None
    group: str | None = None


_PROMPT, _SEP, _ANSWER = 0, 1, 2


def truncate(ids, max_length, *companions):
    """Keep the first token and the last ``max_length - 1`` (the original code's rule).

    ``companions`` are lists aligned with ``ids`` and cut identically. Returns a
    tuple ``(ids, *companions)``.
    """
    if max_length < 1:
        raise ValueError(f"max_length must be at least 1, got {max_length}")
    if len(ids) <= max_length:
        return (ids, *companions)
    keep = lambda seq: seq[:1] + seq[len(seq) - (max_length - 1):]  # noqa: E731
    return (keep(ids), *(keep(c) for c in companions))


def assemble(prompt_ids, answer_ids, label_mode, max_text_length):
    """``(text_ids, task_targets, lm_targets)`` of a prompt ending with ``<sep>`` and its
    answer (see the module docstring), cut to ``max_text_length`` by :func:`truncate`.
    ``label_mode``: the answer is one option token ``(k)``, not read by the LM loss."""
    text_ids = prompt_ids + answer_ids
    roles = [_PROMPT] * (len(prompt_ids) - 1) + [_SEP] + [_ANSWER] * len(answer_ids)
    text_ids, roles = truncate(text_ids, max_text_length, roles)
    n = len(text_ids)
    task_targets = [vocab.IGNORE_ID] * n
    lm_targets = [vocab.IGNORE_ID] * n
    for t in range(n - 1):
        if roles[t] != _PROMPT:
            task_targets[t] = text_ids[t + 1]
        # In label mode the appended (k) is not part of the input the LM loss reads.
        if not (label_mode and roles[t] == _SEP):
            lm_targets[t] = text_ids[t + 1]
    return text_ids, task_targets, lm_targets


class Formatter:
    """Turns :class:`QAExample` into the unified format with NeMoT's targets.

    Args:
        tokenizer: a :class:`nemot.data.Tokenizer`.
        max_text_length: text positions (thesis 768; tests use 32).
        mode: ``"dec"`` (default) or ``"enc"``, the ``<mode>`` auxiliary token.
        task_token: output block / task token name; None uses each example's task
            (``mqa``/``gqa``); the thesis' single-dataset fine-tuning used ``"lm"``.
        mqa_mode: ``"label"`` (answer is the option token ``(k)``) or ``"generate"``
            (answer is the option text followed by ``</s>``).
        max_answer_length: tokens left for generation when cutting the evaluation
            prompt; default 1 in label mode, else 32 (at most a quarter of
            ``max_text_length``).

    Example:
        >>> from nemot.data import Tokenizer
        >>> fmt = Formatter(Tokenizer(), max_text_length=32)
        >>> ex = QAExample(id="1", question="Is it?", answers=("yes",), task="gqa")
        >>> fmt.format(ex).text
        '<q> Is it? <sep> yes </s>'
    """

    def __init__(self, tokenizer, max_text_length=vocab.MAX_TEXT_LENGTH, mode="dec",
                 task_token=None, mqa_mode="label", max_answer_length=None):
        if mode not in ("dec", "enc"):
            raise ValueError(f"mode must be 'dec' or 'enc', got {mode!r}")
        if mqa_mode not in MQA_MODES:
            raise ValueError(f"mqa_mode must be one of {MQA_MODES}, got {mqa_mode!r}")
        if task_token is not None:
            vocab.task_token_id(task_token)  # fails early on unknown names
        if max_answer_length is not None and not 0 < max_answer_length < max_text_length - 1:
            raise ValueError(f"max_answer_length must be in 1..{max_text_length - 2}, "
                             f"got {max_answer_length}")
        if max_text_length < 4:
            raise ValueError(f"max_text_length must be at least 4, got {max_text_length}")
        self.tokenizer = tokenizer
        self.max_text_length = max_text_length
        self.mode = mode
        self.task_token = task_token
        self.mqa_mode = mqa_mode
        self.max_answer_length = max_answer_length

    def _is_label_mode(self, example):
        return example.task == "mqa" and self.mqa_mode == "label"

    def prompt_text(self, example):
        """``<p1> passage <q> question (1) option ... <sep>``; parts joined with single spaces."""
        parts = []
        if example.passage:
            parts += ["<p1>", example.passage]
        parts += ["<q>", example.question]
        for k, option in enumerate(example.options, 1):
            parts += [f"({k})", option]
        parts.append("<sep>")
        return " ".join(parts)

    def answer_text(self, example):
        """The text after ``<sep>``: ``(k)`` in label mode, else ``answer </s>``."""
        if example.task == "mqa":
            if example.label is None:
                return ""  # unlabelled test question: prompt only
            if self._is_label_mode(example):
                return f"({example.label + 1})"
            return f"{join_answer(example.options[example.label])} </s>"
        answer = example.target_answer
        return f"{answer} </s>" if answer else "</s>"

    def golds(self, example):
        """Strings a decoded prediction is scored against."""
        if example.task == "mqa":
            if example.label is None:
                return ()
            if self._is_label_mode(example):
                return (f"({example.label + 1})",)
            return (join_answer(example.options[example.label]),)
        return tuple(clean_answer(a) for a in example.answers) if example.answers else ("",)

    def aux_ids(self, example):
        """``[<cls>, <mode>, <task>]``."""
        task = self.task_token or example.task
        return vocab.aux_ids(self.mode, task)

    def format(self, example):
        """The :class:`FormattedExample` of one example."""
        prompt = self.prompt_text(example)
        answer = self.answer_text(example)
        prompt_ids, answer_ids = self.tokenizer.encode_batch([prompt, answer])
        return self._assemble(example, prompt, answer, prompt_ids, answer_ids)

    def format_batch(self, examples):
        """Like :meth:`format` for many examples, tokenised in one engine call."""
        texts = []
        for ex in examples:
            texts += [self.prompt_text(ex), self.answer_text(ex)]
        ids = self.tokenizer.encode_batch(texts)
        return [self._assemble(ex, texts[2 * i], texts[2 * i + 1], ids[2 * i], ids[2 * i + 1])
                for i, ex in enumerate(examples)]

    def _assemble(self, example, prompt, answer, prompt_ids, answer_ids):
        label_mode = self._is_label_mode(example)
        text_ids, task_targets, lm_targets = assemble(prompt_ids, answer_ids, label_mode,
                                                      self.max_text_length)
        aux = self.aux_ids(example)
        max_answer = self.max_answer_length or (
            1 if label_mode else min(DEFAULT_MAX_ANSWER_LENGTH, self.max_text_length // 4))
        (eval_prompt,) = truncate(prompt_ids, self.max_text_length - max_answer)
        return FormattedExample(
            id=example.id, dataset=example.dataset, subset=example.subset,
            task=self.task_token or example.task, text=f"{prompt} {answer}".rstrip(),
            token_ids=aux + text_ids, task_targets=task_targets, lm_targets=lm_targets,
            prompt_ids=aux + eval_prompt, golds=self.golds(example), label=example.label,
            group=example.group)
