"""step_time_ratio counts the computation of a step, not the time a process waits for the
cores: two runs share the machine's two cores."""

import time

import pytest

from nemot.compare.timing import step_time_ratio


def burn(seconds):
    """Spend ``seconds`` of this process's CPU time."""
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


class FakeModel:
    """A ``fit`` that computes for ``cpu`` seconds, then waits ``idle`` seconds (as a
    process does while another one has the core)."""

    def __init__(self, cpu, idle=0.0, run_eagerly=False):
        self.cpu, self.idle, self.calls, self.run_eagerly = cpu, idle, 0, run_eagerly

    def fit(self, dataset, epochs, steps_per_epoch, shuffle, verbose):
        self.calls += 1
        burn(self.cpu)
        time.sleep(self.idle)


def test_the_ratio_is_of_cpu_time_not_of_waiting():
    model, baseline = FakeModel(0.04, idle=0.1), FakeModel(0.02)
    ratio, seconds = step_time_ratio(model, baseline, None, steps=10, rounds=3)
    # wall clock would give (0.04 + 0.1) / 0.02 = 7
    assert ratio == pytest.approx(2.0, rel=0.25)
    assert len(seconds) == 3 and model.calls == baseline.calls == 4  # warm-up + 3 rounds


def test_eager_models_get_no_warm_up_pass():
    # Nothing to trace; a traced model (either one) still gets its warm-up pass.
    model, baseline = FakeModel(0.001, run_eagerly=True), FakeModel(0.001, run_eagerly=True)
    step_time_ratio(model, baseline, None, steps=1, rounds=2)
    assert model.calls == baseline.calls == 2
    model, baseline = FakeModel(0.001, run_eagerly=True), FakeModel(0.001)
    step_time_ratio(model, baseline, None, steps=1, rounds=2)
    assert model.calls == baseline.calls == 3
