"""``python -m bench memory``'s arithmetic: the activations per example are the slope of
XLA's temporaries between the batch sizes compiled, and the peaks of larger batches are
extrapolated along it (the figures are the compiler's, so no compile runs here)."""

import pytest

from bench import bench_memory

GIB = bench_memory.GIB


def row(arguments, temporaries, outputs=2 * GIB, aliased=2 * GIB):
    return {"bytes": {"arguments": arguments, "outputs": outputs, "aliased": aliased,
                      "temporaries": temporaries,
                      "peak": arguments + outputs - aliased + temporaries},
            "weights_bytes": GIB, "optimizer_bytes": 2 * GIB}


def test_the_slope_of_the_temporaries_is_the_activations_per_example():
    # 3 GiB of state; temporaries 1.5 GiB + 0.5 GiB per example.
    rows = {"1": row(3 * GIB, 2 * GIB), "8": row(3 * GIB, int(5.5 * GIB))}
    summary = bench_memory.summarize(rows, [1, 8])
    assert summary["per_example_activations_gib"] == 0.5
    assert summary["weights_gib"] == 1 and summary["optimizer_gib"] == 2
    assert summary["peak_gib"] == {"1": 5.0, "8": 8.5}
    assert summary["peak_gib_extrapolated"] == {"16": 12.5, "32": 20.5}
    # 4.5 GiB and 0.5 GiB per example: 24 GB (22.35 GiB) hold 35 examples, not 36.
    assert summary["largest_batch_fitting"] == {"24GB": 35, "40GB": 65, "80GB": 140}


def test_only_batches_beyond_those_compiled_are_extrapolated():
    rows = {"1": row(GIB, GIB), "16": row(GIB, 4 * GIB), "32": row(GIB, 7 * GIB)}
    summary = bench_memory.summarize(rows, [1, 16, 32])
    assert summary["per_example_activations_gib"] == pytest.approx(6 / 31, abs=1e-3)
    assert summary["peak_gib_extrapolated"] == {}
    assert summary["peak_gib"]["32"] == 8.0
