"""The multi-format pool of general training (thesis §3.3.1): every example's dataset drawn
at random from several QA datasets, or each global batch's with a
:class:`~nemot.data.sampling.TaskSampler`; batches as :mod:`nemot.data.batching`.

Example:
    >>> ds = pool_dataset(SEED_DATASETS, data_dir="data", batch_size=32)   # doctest: +SKIP
"""

import functools
import itertools
from pathlib import Path

import numpy as np

from nemot.data.batching import batches, rows_dataset
from nemot.data.qa import registry
from nemot.data.qa.pipelines import (epoch_length, example_arrays, example_units, load_formatted,
                                     training_rows)
from nemot.data.qa.registry import SEED_DATASETS
from nemot.data.raw import DataError
from nemot.data.tokenizer import Tokenizer
from nemot.vocab import MAX_TEXT_LENGTH

# Pool draws are made in blocks of this many positions, so resuming recounts cheaply.
POOL_BLOCK = 65536
_POOL_TAG = 7919  # keeps the pool's dataset draws apart from the per-dataset permutations


def dataset_task_tokens(names, task_tokens=None):
    """``{name: task token}``: ``task_tokens`` where given, else the registry task."""
    task_tokens = dict(task_tokens or {})
    unknown = sorted(set(task_tokens) - set(names))
    if unknown:
        raise ValueError(f"task_tokens names datasets {unknown} that are not in {list(names)}")
    return {name: task_tokens.get(name, registry.get(name).task) for name in names}


def pool_members(names, formatted):
    """The sources of the pool: ``[(member, example indices)]`` and each source's share.

    Every member (dataset) has the same share; a member with ``pool_parts`` (RACE,
    ARC) splits its share equally between its parts, whatever their sizes.
    """
    sources, shares = [], []
    for d, (name, examples) in enumerate(zip(names, formatted)):
        parts = registry.get(name).pool_parts
        if not parts:
            sources.append((d, list(range(len(examples)))))
            shares.append(1.0 / len(names))
            continue
        for part in parts:
            rows = [i for i, ex in enumerate(examples) if ex.subset == part]
            if not rows:
                raise DataError(name, "pool", "subset", f"examples of each of its parts {parts} "
                                "(the pool draws them equally)", got=f"none of {part!r}")
            sources.append((d, rows))
            shares.append(1.0 / (len(names) * len(parts)))
    return sources, np.array(shares)


def pool_uniforms(seed, start=0):
    """The pool's seeded uniforms from position ``start`` on, drawn in blocks of
    :data:`POOL_BLOCK` positions (a pure function of the position)."""
    block, i = divmod(int(start), POOL_BLOCK)
    for b in itertools.count(block):
        yield from np.random.default_rng([seed, _POOL_TAG, b]).random(POOL_BLOCK)[i:].tolist()
        i = 0


def _cdf(weights):
    cdf = np.cumsum(weights) / np.sum(weights)
    cdf[-1] = 1.0
    return cdf


def pool_choices(shares, seed, start=0, sampler=None, members=None, batch_size=1):
    """Source index of every pool position from ``start`` on.

    Without a ``sampler`` each position draws a source with probabilities ``shares``
    (the thesis). With one, global batch ``b`` (positions ``b * batch_size ...``) takes
    the member ``sampler`` draws for step ``b`` and each position one of that member's
    sources (``members[source]`` is its member), with their shares.
    """
    uniforms = pool_uniforms(seed, start)
    if sampler is None:
        cdf = _cdf(shares)
        yield from (int(np.searchsorted(cdf, u, "right")) for u in uniforms)
        return
    members = np.asarray(members)
    cdfs = [_cdf(np.where(members == d, shares, 0.0)) for d in range(len(sampler.tasks))]
    step, j = divmod(int(start), batch_size)
    while True:
        for task in sampler.schedule(step, step + POOL_BLOCK):
            cdf = cdfs[sampler.tasks.index(task)]
            for _ in range(batch_size - j):
                yield int(np.searchsorted(cdf, next(uniforms), "right"))
            j = 0
        step += POOL_BLOCK


def pool_dataset(names=SEED_DATASETS, *, data_dir, batch_size, max_text_length=MAX_TEXT_LENGTH,
                 seed=0, start_batch=0, task_tokens=None, tokenizer=None, input_context=None,
                 split="train", mode="dec", mqa_mode="label", pos_tagger=None, make_sampler=None):
    """The multi-format pool of general training (thesis §3.3.1): infinite, mixed batches.

    Each example's dataset is drawn uniformly at random (seeded) from ``names``, and a
    dataset with parts (RACE middle/high, ARC Easy/Challenge) draws one of them with
    equal chance (:func:`pool_members`); each source walks through its own seeded
    per-epoch permutations and restarts when exhausted.

    Args:
        names: registry names (default the seven seed datasets).
        data_dir: one directory with a subdirectory per name, or ``{name: directory}``
            (raw files or QA shards, as :func:`~nemot.data.qa.pipelines.qa_dataset`).
        batch_size: global batch size.
        task_tokens: ``{name: task token}`` overrides (default: the registry's
            ``mqa``/``gqa``); check them with :func:`nemot.data.sources.check_task_tokens`.
        pos_tagger: adds ``x["pos_tags"]`` (highlighting); every dataset is tagged once.
        make_sampler: ``make_sampler({name: training examples per epoch})`` -> a
            :class:`nemot.data.sampling.TaskSampler` over ``names`` (e.g. annealed
            sampling, PALs): each global batch then comes from the one dataset it draws,
            instead of a dataset per example (the thesis).
        Other arguments as :func:`~nemot.data.qa.pipelines.qa_dataset`.
    """
    names = tuple(names)
    if not names:
        raise ValueError("pool_dataset needs at least one dataset name")
    tokens = dataset_task_tokens(names, task_tokens)
    tokenizer = tokenizer or Tokenizer()
    dirs = dict(data_dir) if isinstance(data_dir, dict) else {
        name: Path(data_dir) / name for name in names}
    missing = [name for name in names if name not in dirs]
    if missing:
        raise ValueError(f"data_dir has no directory for {missing}")
    formatted = [load_formatted(name, split, data_dir=dirs[name], max_text_length=max_text_length,
                                task_token=tokens[name], mode=mode, mqa_mode=mqa_mode,
                                tokenizer=tokenizer)
                 for name in names]
    arrays = [example_arrays(f, max_text_length, pos_tagger) for f in formatted]
    sources, shares = pool_members(names, formatted)
    sampler = None
    if make_sampler is not None:
        sampler = make_sampler({name: epoch_length(f) for name, f in zip(names, formatted)})
        if tuple(sampler.tasks) != names:
            raise ValueError(f"sampler tasks {list(sampler.tasks)}: expected the pool's "
                             f"{list(names)}")
    units = [[[rows[i] for i in unit] for unit in example_units([formatted[d][r] for r in rows])]
             for d, rows in sources]

    def make_batches():
        start = start_batch * batch_size
        draws = functools.partial(pool_choices, shares, seed, sampler=sampler,
                                  members=[d for d, _ in sources], batch_size=batch_size)
        # Where each source's stream resumes: how often it was drawn before ``start``.
        counts = np.bincount(np.fromiter(itertools.islice(draws(0), start), np.int64,
                                         count=start), minlength=len(sources))
        choices = draws(start)
        orders = [training_rows(units[s], (seed, s), counts[s]) for s in range(len(sources))]

        def rows():
            for s in choices:
                k = next(orders[s])
                yield tuple(a[k] for a in arrays[sources[s][0]])

        return batches(rows(), batch_size, input_context)

    return rows_dataset(make_batches, batch_size, max_text_length, input_context,
                        pos_tags=pos_tagger is not None)
