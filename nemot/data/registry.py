"""Dataset names -> reader, task token, splits and metric (SPEC.md section 4).

Example:
    >>> from nemot.data import registry
    >>> registry.get("race").metric
    'accuracy'
    >>> examples = registry.load_examples("race", "dev", data_dir="RACE")  # doctest: +SKIP
"""

from dataclasses import dataclass
from functools import partial

from nemot.data.format import expand_answers
from nemot.data.readers import (boolq, choices, commonsense, drop, language_modelling, mctest,
                                narrativeqa, race, squad)


@dataclass(frozen=True)
class DatasetInfo:
    """What the CLI and the multi-format pool need to know about one dataset.

    Args:
        name: registry name (``race``, ``squad_v2``, ...).
        task: ``"mqa"``, ``"gqa"`` or ``"lm"`` (language-modelling evaluation sets).
        metric: ``accuracy``, ``f1``, ``rouge_l`` or ``perplexity``.
        splits: split names of the raw files.
        read: ``read(data_dir, split)`` for the raw files in a local directory.
        read_hub: ``read_hub(split)`` from the hub (needs the network), or None.
        seed: whether it is a seed dataset of general training.
    """

    name: str
    task: str
    metric: str
    splits: tuple
    read: object
    read_hub: object = None
    seed: bool = False


def _squad(name, splits, metric="f1", seed=False):
    return DatasetInfo(name, "gqa", metric, splits, partial(squad.read, name=name),
                       partial(squad.read_hub, name=name) if name in squad.HUB else None, seed)


def _choices(name, seed):
    return DatasetInfo(name, "mqa", "accuracy", tuple(choices.FILES[name]),
                       partial(choices.read, name=name), partial(choices.read_hub, name=name), seed)


_DATASETS = [
    DatasetInfo("race", "mqa", "accuracy", race.SPLITS, race.read, race.read_hub, seed=True),
    _squad("squad_v2", ("train", "dev"), seed=True),
    DatasetInfo("narrativeqa", "gqa", "rouge_l", narrativeqa.SPLITS, narrativeqa.read,
                narrativeqa.read_hub, seed=True),
    DatasetInfo("boolq", "gqa", "accuracy", boolq.SPLITS, boolq.read, boolq.read_hub, seed=True),
    DatasetInfo("boolq_cs", "gqa", "accuracy", ("test",), boolq.read_contrast),
    _choices("arc_easy", seed=True),
    _choices("arc_challenge", seed=True),
    _choices("obqa", seed=True),
    _choices("commonsenseqa", seed=False),
    DatasetInfo("mctest", "mqa", "accuracy", mctest.SPLITS, mctest.read, mctest.read_hub,
                seed=True),
    DatasetInfo("piqa", "mqa", "accuracy", ("train", "valid", "test"), commonsense.read_piqa,
                commonsense.read_piqa_hub),
    DatasetInfo("siqa", "mqa", "accuracy", ("train", "dev"), commonsense.read_siqa,
                commonsense.read_siqa_hub),
    DatasetInfo("winogrande", "mqa", "accuracy", ("train", "dev", "test"),
                commonsense.read_winogrande, commonsense.read_winogrande_hub),
    _squad("quoref", ("train", "dev")),
    _squad("quoref_contrast", ("test",)),
    _squad("ropes", ("train", "dev")),
    _squad("ropes_contrast", ("test",)),
    DatasetInfo("drop", "gqa", "rouge_l", ("train", "dev"), drop.read, drop.read_hub),
    DatasetInfo("drop_contrast", "gqa", "rouge_l", ("test",), partial(drop.read, name="drop_contrast")),
    DatasetInfo("wikitext2", "lm", "perplexity", ("train", "valid", "test"),
                language_modelling.read_wikitext,
                partial(language_modelling.read_wikitext_hub, config="wikitext-2-raw-v1")),
    DatasetInfo("wikitext103", "lm", "perplexity", ("train", "valid", "test"),
                language_modelling.read_wikitext,
                partial(language_modelling.read_wikitext_hub, config="wikitext-103-raw-v1")),
    DatasetInfo("ptb", "lm", "perplexity", ("train", "valid", "test"), language_modelling.read_ptb,
                language_modelling.read_ptb_hub),
    DatasetInfo("lambada", "lm", "perplexity", ("test", "dev"), language_modelling.read_lambada,
                language_modelling.read_lambada_hub),
]

DATASETS = {info.name: info for info in _DATASETS}
# UnifiedQA's seed datasets used for general training (thesis §3.3.1); ARC counts both parts.
SEED_DATASETS = tuple(info.name for info in _DATASETS if info.seed)


def names():
    """All registered dataset names."""
    return sorted(DATASETS)


def get(name):
    """The :class:`DatasetInfo` of ``name``; a clear error listing the known names."""
    if name not in DATASETS:
        raise KeyError(f"unknown dataset {name!r}; known: {', '.join(names())}")
    return DATASETS[name]


def load_examples(name, split, data_dir=None, expand=None):
    """Examples (or LM documents) of ``name``/``split`` as a list.

    Args:
        name: registry name.
        split: one of the dataset's ``splits``.
        data_dir: directory with the raw files; None loads from the hub (needs the network).
        expand: one training example per gold answer (SPEC.md §4); default: ``split == "train"``.
    """
    info = get(name)
    if split not in info.splits:
        raise ValueError(f"{name} has splits {info.splits}, got {split!r}")
    if data_dir is None:
        if info.read_hub is None:
            raise ValueError(f"{name} has no hub loader; pass data_dir= with the raw files")
        items = info.read_hub(split)
    else:
        items = info.read(data_dir, split)
    if info.task != "lm" and (split == "train" if expand is None else expand):
        items = expand_answers(items)
    return list(items)
