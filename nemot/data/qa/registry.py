"""Dataset names -> reader, task token, splits and metric (docs/spec.md section 4).

Example:
    >>> from nemot.data import registry
    >>> registry.get("race").metric
    'accuracy'
    >>> registry.resolve_split("narrativeqa", "dev")   # each dataset's own validation split
    'valid'
    >>> examples = registry.load_examples("race", "dev", data_dir="RACE")  # doctest: +SKIP
"""

from dataclasses import dataclass
from functools import partial

from nemot.data.qa.format import expand_answers
from nemot.data.qa.readers import (boolq, choices, commonsense, drop, language_modelling, mctest,
                                narrativeqa, race, squad)

# Split names that mean "the validation split", whatever a dataset's files call it.
VALIDATION_ALIASES = ("dev", "valid", "validation")


@dataclass(frozen=True)
class DatasetInfo:
    """What the CLI and the multi-format pool need to know about one dataset.

    Args:
        name: registry name (``race``, ``squad_v2``, ...).
        task: ``"mqa"``, ``"gqa"`` or ``"lm"`` (language-modelling evaluation sets).
        metric: ``accuracy``, ``f1``, ``drop_f1``, ``rouge_l`` or ``perplexity``.
        splits: split names of the raw files.
        read: ``read(data_dir, split, **options)`` for the raw files in a local directory.
        read_hub: ``read_hub(split, **options)`` from the Hugging Face hub, or None.
        seed: whether it is a seed dataset of general training.
        validation: the dataset's own name of its validation split (``dev``, ``valid``),
            what ``dev``/``valid``/``validation`` resolve to; None when it has none.
        train_answers: ``"all"``: every gold answer is a training example in every
            epoch (SQuAD, docs/spec.md §4); ``"one"``: one answer per question and epoch,
            drawn at random (NarrativeQA, "answer1 or answer2").
        extra_metrics: metrics reported beside ``metric`` (DROP: the official ``drop_f1``
            beside the thesis' ROUGE-L).
        pool_parts: subsets that share the dataset's slot of the general-training pool
            equally: each draw of the slot picks one of them with equal chance (the
            original code: RACE alternated middle and high, ARC chose Easy or
            Challenge), whatever their sizes.
    """

    name: str
    task: str
    metric: str
    splits: tuple
    read: object
    read_hub: object = None
    seed: bool = False
    validation: str | None = "dev"
    train_answers: str = "all"
    extra_metrics: tuple = ()
    pool_parts: tuple = ()


def _squad(name, splits, metric="f1", seed=False):
    # SQuAD's exact match beside its F1, as SQuAD's own script reports them.
    return DatasetInfo(name, "gqa", metric, splits, partial(squad.read, name=name),
                       partial(squad.read_hub, name=name) if name in squad.HUB else None, seed,
                       validation="dev" if "dev" in splits else None,
                       extra_metrics=("exact_match",) if metric == "f1" else ())


def _choices(name, seed):
    return DatasetInfo(name, "mqa", "accuracy", tuple(choices.FILES[name]),
                       partial(choices.read, name=name), partial(choices.read_hub, name=name), seed)


_WINOGRANDE_TRAIN = ("train",) + tuple(f"train_{s}" for s in commonsense.WINOGRANDE_SIZES)

_DATASETS = [
    DatasetInfo("race", "mqa", "accuracy", race.SPLITS, race.read, race.read_hub, seed=True,
                pool_parts=race.SUBSETS),
    _squad("squad_v2", ("train", "dev"), seed=True),
    DatasetInfo("narrativeqa", "gqa", "rouge_l", narrativeqa.SPLITS, narrativeqa.read,
                narrativeqa.read_hub, seed=True, validation="valid", train_answers="one"),
    DatasetInfo("boolq", "gqa", "accuracy", boolq.SPLITS, boolq.read, boolq.read_hub, seed=True),
    DatasetInfo("boolq_cs", "gqa", "accuracy", ("test",), boolq.read_contrast, validation=None),
    # ARC is one seed dataset (thesis Table 3.7 reports Easy, Challenge and their total):
    # "arc" reads both parts; "arc_easy"/"arc_challenge" each one.
    DatasetInfo("arc", "mqa", "accuracy", ("train", "dev", "test"),
                partial(choices.read_parts, names=choices.ARC_PARTS),
                partial(choices.read_hub_parts, names=choices.ARC_PARTS), seed=True,
                pool_parts=tuple(choices.SUBSETS[n] for n in choices.ARC_PARTS)),
    _choices("arc_easy", seed=False),
    _choices("arc_challenge", seed=False),
    _choices("obqa", seed=True),
    _choices("commonsenseqa", seed=False),
    DatasetInfo("mctest", "mqa", "accuracy", mctest.SPLITS, mctest.read, mctest.read_hub,
                seed=True),
    DatasetInfo("piqa", "mqa", "accuracy", ("train", "valid", "test"), commonsense.read_piqa,
                commonsense.read_piqa_hub, validation="valid"),
    DatasetInfo("siqa", "mqa", "accuracy", ("train", "dev"), commonsense.read_siqa,
                commonsense.read_siqa_hub),
    # WinoGrande's training sizes are splits: train_xs ... train_xl; train = train_xl.
    DatasetInfo("winogrande", "mqa", "accuracy", _WINOGRANDE_TRAIN + ("dev", "test"),
                commonsense.read_winogrande, commonsense.read_winogrande_hub),
    # Quoref's answers are multi-part: its official metric is DROP's multi-span F1.
    _squad("quoref", ("train", "dev"), metric="drop_f1"),
    _squad("quoref_contrast", ("test",), metric="drop_f1"),
    _squad("ropes", ("train", "dev")),
    _squad("ropes_contrast", ("test",)),
    DatasetInfo("drop", "gqa", "rouge_l", ("train", "dev"), drop.read, drop.read_hub,
                extra_metrics=("drop_f1",)),
    DatasetInfo("drop_contrast", "gqa", "rouge_l", ("test",), partial(drop.read, name="drop_contrast"),
                validation=None, extra_metrics=("drop_f1",)),
    DatasetInfo("wikitext2", "lm", "perplexity", ("train", "valid", "test"),
                language_modelling.read_wikitext,
                partial(language_modelling.read_wikitext_hub, config="wikitext-2-v1"),
                validation="valid"),
    DatasetInfo("wikitext103", "lm", "perplexity", ("train", "valid", "test"),
                language_modelling.read_wikitext,
                partial(language_modelling.read_wikitext_hub, config="wikitext-103-v1"),
                validation="valid"),
    DatasetInfo("ptb", "lm", "perplexity", ("train", "valid", "test"), language_modelling.read_ptb,
                language_modelling.read_ptb_hub, validation="valid"),
    DatasetInfo("lambada", "lm", "perplexity", ("test", "dev"), language_modelling.read_lambada,
                language_modelling.read_lambada_hub),
]

DATASETS = {info.name: info for info in _DATASETS}
# UnifiedQA's seed datasets of general training (thesis §3.3.1): seven, ARC one of them.
SEED_DATASETS = tuple(info.name for info in _DATASETS if info.seed)


def names():
    """All registered dataset names."""
    return sorted(DATASETS)


def get(name):
    """The :class:`DatasetInfo` of ``name``; a clear error listing the known names."""
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(names())}")
    return DATASETS[name]


def resolve_split(name, split):
    """The split of ``name`` that ``split`` means: itself, or for ``dev``/``valid``/
    ``validation`` the dataset's own validation split (NarrativeQA's ``valid``)."""
    info = get(name)
    if split in info.splits:
        return split
    if split in VALIDATION_ALIASES and info.validation is not None:
        return info.validation
    aliases = f" ({'/'.join(VALIDATION_ALIASES)} mean {info.validation!r})" if info.validation \
        else ""
    raise ValueError(f"{name} has splits {info.splits}{aliases}, got {split!r}")


def load_examples(name, split, data_dir=None, expand=None, **options):
    """Examples (or LM documents) of ``name``/``split`` as a list.

    Args:
        name: registry name.
        split: one of the dataset's ``splits``, or a validation alias (:func:`resolve_split`).
        data_dir: directory with the raw files (the archive's top folder or the folder
            holding it); None loads from the hub (needs ``datasets`` and the network).
        expand: training examples per gold answer (docs/spec.md §4; see ``train_answers``);
            default: ``split == "train"`` (any training split).
        **options: reader options, e.g. ``collapse_spaces=True`` for the LM sets.
    """
    info = get(name)
    split = resolve_split(name, split)
    if data_dir is None:
        if info.read_hub is None:
            raise ValueError(f"{name} has no hub loader; pass data_dir= with the raw files")
        items = info.read_hub(split, **options)
    else:
        items = info.read(data_dir, split, **options)
    if info.task != "lm" and (split.startswith("train") if expand is None else expand):
        items = expand_answers(items, one_per_epoch=info.train_answers == "one")
    return list(items)
