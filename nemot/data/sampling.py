"""Which task each batch of multi-task training draws: annealed sampling (PALs, Stickland
& Murray 2019), examples-proportional mixing with a rate cap (T5's ``en_mix``, HyperGrid),
and the simple rules.

The draw of step ``s`` is a pure function of ``(seed, s)``, so a run resumed at any step
continues exactly, and :meth:`TaskSampler.counts_before` tells each task's iterator where
to resume.

Example:
    >>> sampler = TaskSampler({"sst": 8544, "quora": 141498, "sts": 6040},
    ...                       mode="annealed", epochs=10, steps_per_epoch=1000, seed=0)
    >>> sampler.probabilities(1)["quora"]        # alpha = 1: proportional
    0.907...
    >>> sampler.task_at(12345)
    'sst'
"""

import numpy as np

MODES = ("annealed", "proportional", "sqrt", "uniform", "round_robin")
# Uniforms are drawn in blocks of this many steps (each block its own generator).
BLOCK = 4096
_TAG = 20190221  # keeps these draws apart from other users of the run seed


class TaskSampler:
    """Draw one task per batch with ``p_i ∝ N_i^alpha``.

    Args:
        sizes: ``{task: number of training examples}`` (the order is the task order).
        mode: ``"annealed"`` (alpha = 1 - 0.8 (e - 1) / (E - 1) in epoch e = 1..E;
            alpha = 1 when E = 1), ``"proportional"`` (alpha = 1), ``"sqrt"``
            (alpha = 0.5), ``"uniform"`` (alpha = 0) or ``"round_robin"`` (tasks in turn).
        epochs: E, the annealing horizon; steps after it keep the last epoch's alpha.
        steps_per_epoch: optimizer steps per epoch (which epoch a step is in).
        seed: the draws' seed.
        cap: examples-proportional mixing with a rate cap: ``N_i`` counts as
            ``min(N_i, cap)`` (T5's ``en_mix``); None = no cap.
    """

    def __init__(self, sizes, mode="annealed", epochs=1, steps_per_epoch=1, seed=0, cap=None):
        sizes = dict(sizes)
        if not sizes:
            raise ValueError("TaskSampler: no tasks given")
        bad = {task: n for task, n in sizes.items() if not (isinstance(n, (int, np.integer))
                                                            and n > 0)}
        if bad:
            raise ValueError(f"TaskSampler: task sizes must be positive integers, got {bad}")
        if mode not in MODES:
            raise ValueError(f"TaskSampler mode {mode!r}: expected one of {MODES}")
        if epochs < 1 or steps_per_epoch < 1:
            raise ValueError(f"TaskSampler: epochs={epochs} and steps_per_epoch="
                             f"{steps_per_epoch} must be at least 1")
        if cap is not None and cap < 1:
            raise ValueError(f"TaskSampler: cap={cap}: expected a positive number or None")
        self.tasks = tuple(sizes)
        self.sizes = np.array([sizes[t] for t in self.tasks], dtype=np.float64)
        if cap is not None:
            self.sizes = np.minimum(self.sizes, cap)
        self.mode, self.epochs, self.steps_per_epoch = mode, int(epochs), int(steps_per_epoch)
        self.seed, self.cap = int(seed), cap

    def alpha(self, epoch):
        """The exponent of epoch ``epoch`` (1-based)."""
        if self.mode == "annealed":
            if self.epochs == 1:
                return 1.0
            e = min(max(int(epoch), 1), self.epochs)
            return 1.0 - 0.8 * (e - 1) / (self.epochs - 1)
        return {"proportional": 1.0, "sqrt": 0.5, "uniform": 0.0, "round_robin": 0.0}[self.mode]

    def _probabilities(self, epoch):
        weights = self.sizes ** self.alpha(epoch)
        return weights / weights.sum()

    def probabilities(self, epoch):
        """``{task: p}`` in epoch ``epoch`` (1-based); round robin: each 1 / T."""
        return dict(zip(self.tasks, self._probabilities(epoch).tolist()))

    def epoch_of(self, step):
        """The 1-based epoch of global step ``step`` (0-based)."""
        return int(step) // self.steps_per_epoch + 1

    def _indices(self, start, stop):
        """Task indices of steps ``[start, stop)``."""
        steps = np.arange(start, stop, dtype=np.int64)
        if self.mode == "round_robin":
            return steps % len(self.tasks)
        out = np.empty(len(steps), dtype=np.int64)
        for block in range(start // BLOCK, (max(stop, start + 1) - 1) // BLOCK + 1):
            lo, hi = max(start, block * BLOCK), min(stop, (block + 1) * BLOCK)
            if lo >= hi:
                continue
            uniforms = np.random.default_rng([self.seed, _TAG, block]).random(BLOCK)
            u = uniforms[lo - block * BLOCK: hi - block * BLOCK]
            epochs = steps[lo - start: hi - start] // self.steps_per_epoch + 1
            for epoch in np.unique(epochs):
                where = epochs == epoch
                cdf = np.cumsum(self._probabilities(epoch))
                cdf[-1] = 1.0
                out[lo - start: hi - start][where] = np.searchsorted(cdf, u[where], "right")
        return out

    def task_at(self, step):
        """The task of global step ``step``."""
        return self.tasks[int(self._indices(int(step), int(step) + 1)[0])]

    def schedule(self, start, stop):
        """The tasks of steps ``[start, stop)``."""
        return [self.tasks[i] for i in self._indices(int(start), int(stop))]

    def counts_before(self, step):
        """``{task: batches drawn in steps [0, step)}`` (where each task's stream resumes)."""
        counts = np.bincount(self._indices(0, int(step)), minlength=len(self.tasks))
        return dict(zip(self.tasks, counts.tolist()))


def sampled_batches(make_iterator, sampler, start_step=0):
    """``(task, batch)`` for steps ``start_step, start_step + 1, ...`` forever.

    Args:
        make_iterator: ``make_iterator(task, start_batch)`` -> an (infinite) iterator of
            that task's batches from its own position ``start_batch``.
        sampler: a :class:`TaskSampler`.
        start_step: the global step to start at (a resumed run's optimizer step).
    """
    iterators = {}
    counts = sampler.counts_before(start_step)
    step = int(start_step)
    while True:
        for index in sampler._indices(step, step + BLOCK):
            task = sampler.tasks[index]
            if task not in iterators:
                iterators[task] = iter(make_iterator(task, counts[task]))
            yield task, next(iterators[task])
        step += BLOCK


def shuffled_batches(size, batch_size, seed, start_batch=0):
    """Index arrays of one task's batches forever, from batch ``start_batch``.

    Each pass over the ``size`` examples is its own permutation, seeded by ``seed`` (an
    int or a sequence, e.g. ``[run seed, task index]``) and the pass; a batch may straddle
    two passes. Batch ``b`` is the same whatever ``start_batch`` the stream starts from,
    so a resumed run continues exactly (with :func:`sampled_batches`).

    Example:
        >>> next(shuffled_batches(5, 4, seed=[0, 1])).shape
        (4,)
    """
    if size < 1 or batch_size < 1:
        raise ValueError(f"shuffled_batches: size={size}, batch_size={batch_size}: expected >= 1")
    seed = list(np.atleast_1d(seed).tolist())

    def permutation(epoch):
        return np.random.default_rng([*seed, epoch]).permutation(size)

    b = int(start_batch)
    while True:
        first = b * batch_size
        last = first + batch_size
        yield np.concatenate([permutation(epoch)[max(first - epoch * size, 0):last - epoch * size]
                              for epoch in range(first // size, (last - 1) // size + 1)])
        b += 1
