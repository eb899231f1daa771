"""The suite's order: the longest files first, so that every worker stays busy to the end.

``make test`` runs ``pytest -n 3 --dist loadfile --no-loadscope-reorder`` on two cores: a
file's tests stay on one worker, and the files are handed out in collection order
(pytest-xdist's default would hand out the files with the most tests first, leaving the
few long learning proofs for the end, where one worker runs them alone). A third worker
runs while another waits on a subprocess or a lock (the JAX subprocesses, the notebook
kernels, the distributed workers): with two, the cores were 85% busy; with three, 96%
(a fresh clone, 2026-11-29: 1,230 s against 1,378 s for the same tests less two). The
longest-processing-time-first order below (the seconds a file held its worker, in that
run, longest first) is what the collection puts first; every other file keeps its place
after them. The summary's "CPU seconds per file" gives each file's CPU time, subprocesses
included: what a cut of the suite is measured by.
"""

import collections
import gc
import os
import resource
from pathlib import Path

import pytest

# XLA at its cheapest optimisation level, with the CPU's older elemental code generator
# instead of its fusion emitters (numerics unchanged): the suite's XLA programs (decoding
# loops, jit_compile steps) run for a few steps, so compiling them costs more than running
# them (the bfloat16 + XLA run: 50 s -> 26 s with the first two flags, -> 16 s with the
# third). Set before TensorFlow reads it; tests/test_jax_backend.py uses them too.
CHEAP_XLA_FLAGS = ("--xla_backend_optimization_level=0 --xla_llvm_disable_expensive_passes=true "
                   "--xla_cpu_use_fusion_emitters=false")
os.environ["XLA_FLAGS"] = " ".join(filter(None, (os.environ.get("XLA_FLAGS", ""),
                                                 CHEAP_XLA_FLAGS)))

# TensorFlow's graph optimizer (Grappler) off where the tests run, for the suite's tiny
# graphs that run a few steps: rewriting each traced function costs more than the steps it
# would speed up (eight model and training files side by side on the 2-core machine at -n 3,
# twice each: 193 and 178 CPU seconds with it, 162 and 158 without; what is computed is
# the same, its rounding may differ, which no test's tolerance is tighter than). The
# notebook kernels get the same switch (tests/test_notebooks.py).
NO_GRAPPLER = {"disable_meta_optimizer": True}


def pytest_configure(config):
    # In each xdist worker, or in the one process of a run without workers; the controller
    # of a run with workers runs no test and need not import TensorFlow.
    if os.environ.get("PYTEST_XDIST_WORKER") or not getattr(config.option, "numprocesses",
                                                            None):
        import nemot  # noqa: F401  (first: TensorFlow then loads without its start-up notices)
        import tensorflow as tf
        from nemot import console

        tf.config.optimizer.set_experimental_options(NO_GRAPPLER)
        # The worker's process ends with its last test: no last garbage collection of what
        # its tests left (seconds, with TensorFlow loaded and hundreds of models built).
        console.end_without_collecting()


def pytest_collection_finish():
    """What the imports and the collection made (TensorFlow, Keras, KerasHub, nemot, the
    test modules: over half a million objects) frozen out of the garbage collector's sight
    (:func:`gc.freeze`): a full collection walks only what the tests made since. Keras's
    ``clear_session`` (every run of ``nemot runs``), pytest's own collections and the
    interpreter's automatic ones walk that heap each time: 0.3 CPU seconds a collection with
    two tiny models built, 0.003 frozen; six model and run files in one process, 105 CPU
    seconds -> 81 (tests/test_runs.py 19.7 -> 3.6). Nothing made by a test is frozen, so
    its garbage is collected as before."""
    gc.collect()
    gc.freeze()


# What TensorFlow prints as it loads on a machine without a GPU driver, unless
# `import nemot` came first (tests/test_cli.py, tests/test_notebooks.py, tests/test_package.py).
BACKEND_NOTICES = ("absl::InitializeLog", "cudart_stub", "cuInit", "oneDNN", "cpu_feature_guard")

SLOWEST_FIRST = (
    "tests/training/test_jax_runs.py",
    "tests/test_notebooks.py",
    "tests/test_demo.py",
    "tests/test_package.py",
    "tests/training/test_runs.py",
    "tests/training/test_distributed.py",
    "tests/models/test_presets.py",
    "tests/models/test_keras_hub_habits.py",
    "tests/training/test_learning_span.py",
    "tests/training/test_faults.py",
    "tests/compare/test_experiment.py",
    "tests/ngt/test_train.py",
    "tests/test_runs.py",
    "tests/training/test_resume.py",
    "tests/models/test_nemot.py",
    "tests/models/test_generation.py",
    "tests/evaluation/test_evaluate.py",
    "tests/test_docs.py",
    "tests/test_cli.py",
    "tests/layers/test_attention.py",
    "tests/models/test_losses.py",
    "tests/modact/test_experiment.py",
    "tests/data/test_c4_tfds.py",
    "tests/hypergrid/test_model.py",
    "tests/models/test_reading_strategies_model.py",
    "tests/models/test_routing.py",
    "tests/modulation/test_pals.py",
    "tests/models/test_vocab_padding.py",
    "tests/experiments/test_nemot_runs.py",
    "tests/test_config.py",
    "tests/data/test_fuzz.py",
    # Last: its report comes from the subprocess test_jax_runs.py (first) starts.
    "tests/test_jax_backend.py",
)


def pytest_collection_modifyitems(config, items):
    root = Path(config.rootpath)
    missing = [path for path in SLOWEST_FIRST if not (root / path).is_file()]
    if missing:
        raise pytest.UsageError(f"tests/conftest.py SLOWEST_FIRST names no file: {missing}")
    rank = {path: index for index, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


_CPU_START = pytest.StashKey[float]()
_CPU_BY_FILE = collections.Counter()


def _cpu_seconds():
    """User + system CPU seconds of this process (every thread) and of its finished
    children (a subprocess counts once the test has waited for it)."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                        resource.RUSAGE_CHILDREN))
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    item.stash[_CPU_START] = _cpu_seconds()
    yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when == "teardown":
        spent = _cpu_seconds() - item.stash[_CPU_START]
        outcome.get_result().user_properties.append(("cpu_seconds", round(spent, 2)))


def pytest_runtest_logreport(report):
    if report.when == "teardown":
        _CPU_BY_FILE[report.nodeid.split("::")[0]] += dict(report.user_properties).get(
            "cpu_seconds", 0.0)


def pytest_terminal_summary(terminalreporter):
    """CPU seconds per test file, the most first: what orders :data:`SLOWEST_FIRST` and
    what a cut of the suite's time is measured by (``--durations`` gives wall seconds,
    which a test waiting on the other worker's subprocess inflates)."""
    if not _CPU_BY_FILE:
        return
    total = sum(_CPU_BY_FILE.values())
    terminalreporter.section(f"CPU seconds per file ({total:.0f} in all)")
    for path, seconds in _CPU_BY_FILE.most_common(25):
        terminalreporter.write_line(f"{seconds:8.1f}  {path}")


@pytest.fixture
def eager():
    """Run TensorFlow functions eagerly (``tf.config.run_functions_eagerly``) for a test of
    what surrounds a few tiny training steps: checkpoints, resumes, best models, reports,
    command-line messages. Tracing a model's train, test and decoding functions costs more
    than the few steps they then run (measured side by side on the 2-core machine: the
    fine-tuning command's test 134 s -> 88 s, the NaN guard's 47 s -> 18 s). The graph and
    XLA paths stay covered by the tests that are about them: the learning proofs, the
    ``jit_compile`` and bfloat16 + XLA tests, the decoding tests, the demo and the README
    recipe."""
    import tensorflow as tf

    tf.config.run_functions_eagerly(True)
    try:
        yield
    finally:
        tf.config.run_functions_eagerly(False)


def draw_zeros(monkeypatch):
    """Makes Keras's random initializers give zeros, with ``monkeypatch``; returns the
    list of the shapes they answer."""
    import keras
    from keras.src.initializers import random_initializers

    calls = []

    def zeros(self, shape, dtype=None):
        calls.append(shape)
        return keras.ops.zeros(shape, dtype=dtype)

    for name in ("RandomNormal", "RandomUniform", "TruncatedNormal", "VarianceScaling",
                 "Orthogonal"):
        monkeypatch.setattr(getattr(random_initializers, name), "__call__", zeros)
    return calls


@pytest.fixture
def undrawn_weights(monkeypatch):
    """Keras's random initializers give zeros, for a test that counts a model's
    parameters at a paper's size: drawing BERT-large's 371M random values took 12 of the
    16 s its count cost (GPT-2 Medium 4.5 of 7 s, the 2-core machine); a count does not
    depend on the values. Yields the shapes it answered (empty: nothing was drawn here)."""
    yield draw_zeros(monkeypatch)
