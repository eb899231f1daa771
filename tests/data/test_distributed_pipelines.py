"""Distribution: the replicas (and input pipelines) of a step together see exactly the
single-device global batch of that step."""

import itertools
import json
import os
import subprocess
import sys
import textwrap
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import tensorflow as tf

from nemot.data import Formatter, prepare
from nemot.data.c4.pipeline import c4_dataset
from nemot.data.qa import registry
from nemot.data.qa.pipelines import examples_dataset
from nemot.data.qa.pool import pool_dataset
from tests.data import fixtures

N = 16
GLOBAL = 8
STEPS = 5
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def sources(tmp_path_factory, raw_dirs, tok):
    root = tmp_path_factory.mktemp("dist")
    fixtures.write_c4(root / "c4raw", n_train=3, docs_per_file=4)
    prepare.prepare_c4(root / "c4raw", root / "c4", workers=1, progress=False)
    formatted = Formatter(tok, max_text_length=N).format_batch(
        registry.load_examples("mctest", "train", raw_dirs["mctest"])
        + registry.load_examples("boolq", "train", raw_dirs["boolq"]))
    return {
        "c4": partial(c4_dataset, root / "c4", max_text_length=N, seed=2, shuffle_buffer=5,
                      window_index=None),
        "qa": partial(examples_dataset, formatted, max_text_length=N, seed=2),
        "pool": partial(pool_dataset, ["race", "boolq", "squad_v2"], data_dir=raw_dirs,
                        max_text_length=N, seed=2, tokenizer=tok),
    }


def _arrays(batch):
    x, y = batch
    return [np.asarray(x["token_ids"]), np.asarray(y["task_targets"]),
            np.asarray(y["lm_targets"])]


def _global_batches(dataset_fn, start_batch=0):
    return [_arrays(b) for b in itertools.islice(dataset_fn(batch_size=GLOBAL,
                                                            start_batch=start_batch), STEPS)]


@pytest.mark.parametrize("name", ["c4", "qa", "pool"])
@pytest.mark.parametrize("pipelines,replicas", [(2, 2), (2, 4)])
def test_each_input_pipeline_gets_its_slice_of_every_global_batch(sources, name, pipelines,
                                                                  replicas):
    dataset_fn = sources[name]
    expected = _global_batches(dataset_fn, start_batch=1)
    per_pipeline = replicas // pipelines
    shares = []
    for pipeline_id in range(pipelines):
        context = tf.distribute.InputContext(num_input_pipelines=pipelines,
                                             input_pipeline_id=pipeline_id,
                                             num_replicas_in_sync=replicas)
        ds = dataset_fn(batch_size=GLOBAL, start_batch=1, input_context=context)
        batches = [_arrays(b) for b in itertools.islice(ds, STEPS * per_pipeline)]
        assert all(b[0].shape == (GLOBAL // replicas, 3 + N) for b in batches)
        # Consecutive per-replica batches go to this worker's replicas, step by step.
        shares.append([[np.concatenate([b[k] for b in batches[s * per_pipeline:
                                                              (s + 1) * per_pipeline]])
                        for k in range(3)] for s in range(STEPS)])
    for step in range(STEPS):
        for k in range(3):
            union = np.concatenate([share[step][k] for share in shares])
            np.testing.assert_array_equal(union, expected[step][k])


def test_uneven_global_batches_are_refused(sources):
    context = tf.distribute.InputContext(num_input_pipelines=1, input_pipeline_id=0,
                                         num_replicas_in_sync=3)
    with pytest.raises(ValueError, match="divide evenly over 3 replicas"):
        sources["qa"](batch_size=GLOBAL, input_context=context)


SCRIPT = """
import itertools, json, sys
from functools import partial
import tensorflow as tf
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
from nemot.data.c4.pipeline import c4_dataset
from nemot.data.qa.pool import pool_dataset
from nemot.training.distributed import distribute
args = json.loads(sys.argv[1])
strategy = tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"])
fns = {"c4": partial(c4_dataset, args["c4"], max_text_length=args["n"], seed=2,
                     shuffle_buffer=5, window_index=None),
       "pool": partial(pool_dataset, ["race", "boolq", "squad_v2"], data_dir=args["raw"],
                       max_text_length=args["n"], seed=2)}
out = {}
for name, fn in fns.items():
    ds = distribute(strategy, fn, args["global"])
    steps = []
    for x, y in itertools.islice(ds, args["steps"]):
        # A replica step runs on each device's own slice.
        summed = strategy.run(lambda t: tf.reduce_sum(tf.cast(t >= 0, tf.int32)), (y["task_targets"],))
        steps.append([[r.numpy().tolist() for r in strategy.experimental_local_results(t)]
                      for t in (x["token_ids"], y["task_targets"], y["lm_targets"])]
                     + [[int(v) for v in strategy.experimental_local_results(summed)]])
    out[name] = steps
print("RESULT" + json.dumps({"replicas": strategy.num_replicas_in_sync, "steps": out}))
"""


def test_mirrored_strategy_on_two_cpu_devices_splits_global_batches(sources, raw_dirs, tmp_path):
    c4_dir = Path(sources["c4"].args[0])
    args = {"c4": str(c4_dir), "raw": str(raw_dirs["race"].parent), "n": N, "global": GLOBAL,
            "steps": STEPS}
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", NEMOT_CACHE=str(tmp_path))
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(SCRIPT), json.dumps(args)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.split("RESULT", 1)[1])
    assert result["replicas"] == 2
    for name in ("c4", "pool"):
        expected = _global_batches(sources[name])
        for step, (tensors, expected_step) in enumerate(zip(result["steps"][name], expected,
                                                            strict=True)):
            *tensors, counted = tensors
            for per_replica, want in zip(tensors, expected_step):
                assert [len(r) for r in per_replica] == [GLOBAL // 2] * 2
                np.testing.assert_array_equal(np.concatenate(per_replica), want)
            # Each replica counted the targets of its own half.
            halves = np.split(expected_step[1], 2)
            assert counted == [int((h >= 0).sum()) for h in halves]
