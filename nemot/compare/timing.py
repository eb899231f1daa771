"""``step_time_ratio``: a variant's training step time over the plain model's, measured
side by side in one process (issue 28), so both see the same machine and the same load."""

import statistics
import time


def step_time_ratio(model, baseline, dataset, steps, rounds):
    """Median over ``rounds`` of (time of one ``fit`` pass of ``model`` over the first
    ``steps`` batches of ``dataset`` / ``baseline``'s), the two alternating (and which goes first too), after
    one warm-up pass each (the baseline's traces its step; the trained model's is traced
    already, on batches of the same signature). Returns the ratio and the seconds
    ``[(model, baseline), ...]`` of every round."""
    def timed(which):
        start = time.perf_counter()
        which.fit(dataset, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)
        return time.perf_counter() - start

    timed(model), timed(baseline)
    seconds = []
    for r in range(rounds):
        if r % 2 == 0:
            first = timed(model)
            seconds.append((first, timed(baseline)))
        else:
            first = timed(baseline)
            seconds.append((timed(model), first))
    return statistics.median(m / b for m, b in seconds), seconds
