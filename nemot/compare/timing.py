"""``step_time_ratio``: a variant's training step time over the plain model's, measured
side by side in one process.

The clock is the process's CPU time (``time.process_time``: every thread of the process),
not the wall clock. The comparison runs two processes on two cores (``--jobs 2``), and a
process's wall time follows the share of the cores the scheduler gives it at that moment:
on the 2-core machine ten steps of ``none`` took 2.56, 5.14 or 10.3 s of wall-clock time
for the same 2.5 s of computation, so the ratio jumped by factors of two (``none`` against
itself measured 0.83; ``pals`` 1.01 in one run and 1.99 in the next). CPU time counts the
computation alone; on an idle machine with one thread per process the two clocks agree.
"""

import statistics
import time


def step_time_ratio(model, baseline, dataset, steps, rounds, clock=time.process_time):
    """Median over ``rounds`` of (``clock`` seconds of one ``fit`` pass of ``model`` over
    the first ``steps`` batches of ``dataset`` / ``baseline``'s), the two alternating (and
    which goes first too), after one warm-up pass each (the baseline's traces its step;
    the trained model's is traced already, on batches of the same signature). Two models
    that run eagerly (``run_eagerly``: nothing to trace) get no warm-up pass. Returns the
    ratio and the seconds ``[(model, baseline), ...]`` of every round."""
    def timed(which):
        start = clock()
        which.fit(dataset, epochs=1, steps_per_epoch=steps, shuffle=False, verbose=0)
        return clock() - start

    if not (model.run_eagerly and baseline.run_eagerly):
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
