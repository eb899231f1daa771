import itertools
from collections import Counter

import numpy as np
import pytest

from nemot import vocab
from nemot.config import NeMoTConfig
from nemot.data import SEED_DATASETS, DataError, Formatter, QAExample, prepare
from nemot.data.batching import generator_dataset
from nemot.data.qa import registry
from nemot.data.qa.pipelines import (epoch_length, eval_examples, examples_dataset, qa_dataset,
                                     validation_dataset)
from nemot.data.qa.pool import dataset_task_tokens, pool_choices, pool_dataset, pool_members
from nemot.data.sampling import TaskSampler
from nemot.data.sources import check_task_tokens
from nemot.data.tf_errors import python_errors

N = 32
PAD, IGN = vocab.PAD_ID, vocab.IGNORE_ID


def rows_of(ds, count=None):
    """Rows ``(token_ids, task_targets, lm_targets)`` of the first ``count`` batches."""
    return [row for x, y in itertools.islice(ds, count)
            for row in zip(x["token_ids"].numpy(), y["task_targets"].numpy(),
                           y["lm_targets"].numpy())]


def same_rows(a, b):
    return len(a) == len(b) and all(
        all(np.array_equal(u, v) for u, v in zip(r, s)) for r, s in zip(a, b))


def counted(targets):
    return [t for t, v in enumerate(targets) if v != IGN]


@pytest.mark.parametrize("name,mqa_mode,task_token", [
    ("race", "label", None), ("race", "generate", None), ("squad_v2", "label", None),
    ("boolq", "label", "lm"), ("mctest", "label", "lm")])
def test_targets_are_next_inputs_exactly_where_they_count(raw_dirs, tok, name, mqa_mode,
                                                          task_token):
    formatter = Formatter(tok, max_text_length=N, task_token=task_token, mqa_mode=mqa_mode)
    examples = registry.load_examples(name, "train", raw_dirs[name])
    formatted = formatter.format_batch(examples)
    rows = rows_of(examples_dataset(formatted, batch_size=3, max_text_length=N, shuffle=False,
                                    repeat=False))
    assert len(rows) == 3 * -(-len(examples) // 3)
    for ex, (token_ids, task, lm) in zip(examples, rows):
        text = token_ids[3:].tolist()
        length = N - text.count(PAD)
        assert token_ids[:3].tolist() == [vocab.CLS_ID, vocab.DEC_ID,
                                          vocab.task_token_id(task_token or ex.task)]
        assert PAD not in text[:length] and set(text[length:]) <= {PAD}
        sep = text.index(vocab.SEP_ID)
        for t in counted(task) + counted(lm):
            assert t + 1 < length
        for t in counted(task):
            assert task[t] == text[t + 1]
        for t in counted(lm):
            assert lm[t] == text[t + 1]
        if ex.task == "mqa" and mqa_mode == "label":
            assert counted(task) == [sep] and task[sep] == vocab.OPTION_IDS[ex.label]
            assert counted(lm) == [t for t in range(length - 1) if t != sep]
        else:
            assert counted(task) == list(range(sep, length - 1))
            assert text[length - 1] == vocab.END_ID
            assert counted(lm) == list(range(length - 1))
    for token_ids, task, lm in rows[len(examples):]:  # the padded last batch counts nothing
        assert (token_ids[3:] == PAD).all() and (task == IGN).all() and (lm == IGN).all()


def test_qa_shards_give_the_same_batches_as_raw_files(raw_dirs, tmp_path, tok):
    prepare.prepare_qa("race", "train", raw_dirs["race"], tmp_path, tokenizer=tok,
                         max_text_length=N)
    for task_token in (None, "lm"):
        kwargs = dict(batch_size=3, max_text_length=N, seed=4, task_token=task_token,
                      tokenizer=tok)
        from_raw = rows_of(qa_dataset("race", "train", data_dir=raw_dirs["race"], **kwargs), 4)
        from_shards = rows_of(qa_dataset("race", "train", data_dir=tmp_path, **kwargs), 4)
        assert same_rows(from_raw, from_shards)
        assert {int(r[0][2]) for r in from_shards} == {vocab.task_token_id(task_token or "mqa")}
    with pytest.raises(DataError, match=r"race-train-00000-of-00001.npz.*--max-text-length 16"):
        qa_dataset("race", "train", data_dir=tmp_path, batch_size=2, max_text_length=16)


def test_epochs_are_seeded_permutations_and_resume_is_exact(raw_dirs, tok):
    formatted = Formatter(tok, max_text_length=N).format_batch(
        registry.load_examples("mctest", "train", raw_dirs["mctest"]))
    size = len(formatted)
    assert size == 8

    def rows(seed, start_batch=0, count=None):
        return rows_of(examples_dataset(formatted, batch_size=3, max_text_length=N, seed=seed,
                                        start_batch=start_batch), count)

    full = rows(seed=1, count=10)  # 30 rows: three epochs and a bit
    keys = [r[0].tobytes() for r in full]
    expected = sorted(np.asarray(f.token_ids + [PAD] * (N + 3 - len(f.token_ids)), np.int32)
                      .tobytes() for f in formatted)
    for e in range(3):
        assert sorted(keys[e * size:(e + 1) * size]) == expected
    assert keys[:size] != keys[size:2 * size]
    assert same_rows(rows(seed=1, count=10), full)
    assert [r[0].tobytes() for r in rows(seed=2, count=10)] != keys
    for k in (1, 5, 9):
        assert same_rows(rows(seed=1, start_batch=k, count=10 - k), full[3 * k:])


def test_validation_is_one_pass_in_file_order_with_ignored_padding(raw_dirs, tok):
    examples = registry.load_examples("race", "dev", raw_dirs["race"])
    formatted = Formatter(tok, max_text_length=N).format_batch(examples)
    rows = rows_of(validation_dataset("race", "dev", data_dir=raw_dirs["race"], batch_size=3,
                                      max_text_length=N, tokenizer=tok))
    assert len(rows) == 6 and len(formatted) == 4
    for f, (token_ids, task, _) in zip(formatted, rows):
        assert token_ids[:len(f.token_ids)].tolist() == f.token_ids
        assert task[:len(f.task_targets)].tolist() == f.task_targets
    assert all((r[1] == IGN).all() and (r[2] == IGN).all() for r in rows[4:])


def test_finite_datasets_know_their_length(raw_dirs, tok):
    """Keras' evaluate averages in one empty step on datasets of unknown length."""
    ds = validation_dataset("race", "dev", data_dir=raw_dirs["race"], batch_size=3,
                            max_text_length=N, tokenizer=tok)
    assert int(ds.cardinality()) == 2 == sum(1 for _ in ds)
    resumed = qa_dataset("race", "dev", data_dir=raw_dirs["race"], batch_size=3,
                         max_text_length=N, tokenizer=tok, start_batch=1, shuffle=False,
                         repeat=False)
    assert int(resumed.cardinality()) == 1 == sum(1 for _ in resumed)


def test_eval_examples_keep_one_example_per_question_with_all_golds(raw_dirs, tmp_path, tok):
    examples = eval_examples("squad_v2", "dev", data_dir=raw_dirs["squad_v2"],
                             max_text_length=N, tokenizer=tok)
    assert [e.golds for e in examples] == [("a bean", "bean"), ("",)]
    assert all(e.prompt_ids[-1] == vocab.SEP_ID for e in examples)
    assert len(eval_examples("squad_v2", "dev", data_dir=raw_dirs["squad_v2"], limit=1,
                             tokenizer=tok)) == 1
    prepare.prepare_qa("squad_v2", "dev", raw_dirs["squad_v2"], tmp_path, tokenizer=tok,
                         max_text_length=N)
    from_shards = eval_examples("squad_v2", "dev", data_dir=tmp_path, max_text_length=N,
                                tokenizer=tok)
    assert [(e.token_ids, e.prompt_ids, e.golds) for e in from_shards] == \
        [(e.token_ids, e.prompt_ids, e.golds) for e in examples]
    assert from_shards[0].text.startswith("<p1> Mia planted a bean.")


# Distinct task tokens tell the pool's datasets apart in the batches.
POOL_TOKENS = dict(zip(SEED_DATASETS, ["lm", "mqa", "gqa", "pmqa", "bmqa", "pgqa", "psqa"]))


def test_pool_draws_its_seven_datasets_uniformly_and_restarts_each_one(raw_dirs, tok):
    # ARC is one member (thesis: seven datasets, each evenly represented).
    assert SEED_DATASETS == ("race", "squad_v2", "narrativeqa", "boolq", "arc", "obqa", "mctest")
    ds = pool_dataset(data_dir=raw_dirs, batch_size=200, max_text_length=N, seed=3,
                      task_tokens=POOL_TOKENS, tokenizer=tok)
    rows = rows_of(ds, 100)
    by_id = {vocab.task_token_id(token): name for name, token in POOL_TOKENS.items()}
    drawn = [by_id[int(r[0][2])] for r in rows]
    frequencies = Counter(drawn)
    assert len(drawn) == 20000 and set(frequencies) == set(SEED_DATASETS)
    for name in SEED_DATASETS:
        assert abs(frequencies[name] / 20000 - 1 / 7) < 0.02, frequencies
    # Each dataset restarts when exhausted: its draws are whole permutations of its
    # questions, epoch by epoch (NarrativeQA: one of a question's two answers per epoch;
    # RACE and ARC: of each part's questions).
    for name in ("squad_v2", "narrativeqa", "boolq", "obqa", "mctest"):
        size = epoch_length(Formatter(tok, max_text_length=N).format_batch(
            registry.load_examples(name, "train", raw_dirs[name])))
        seen = [r[0][:list(r[0]).index(vocab.SEP_ID)].tobytes()
                for r, d in zip(rows, drawn) if d == name]
        epochs = [sorted(seen[e * size:(e + 1) * size]) for e in range(len(seen) // size)]
        assert len(epochs) > 100 and all(epoch == epochs[0] for epoch in epochs)


def formatted_race(tok, middle, high):
    examples = [QAExample(id=f"{part}{i}", question=f"q{i}", passage=part, options=("a", "b"),
                          answers=("a",), label=0, task="mqa", dataset="race", subset=part)
                for part, count in (("middle", middle), ("high", high)) for i in range(count)]
    return Formatter(tok, max_text_length=N).format_batch(examples)


def test_the_parts_of_race_and_arc_share_their_slot_equally_whatever_their_sizes(tok):
    race = formatted_race(tok, middle=2, high=6)
    boolq = formatted_race(tok, middle=3, high=0)
    sources, shares = pool_members(("race", "obqa"), [race, boolq])
    assert [(d, len(rows)) for d, rows in sources] == [(0, 2), (0, 6), (1, 3)]
    np.testing.assert_allclose(shares, [0.25, 0.25, 0.5])
    draws = np.fromiter(itertools.islice(pool_choices(shares, seed=1), 40000), int)
    np.testing.assert_allclose(np.bincount(draws) / 40000, shares, atol=0.01)
    with pytest.raises(DataError, match="none of 'high'"):
        pool_members(("race",), [race[:2]])


def test_the_pool_can_draw_whole_batches_by_task_sampler(raw_dirs, tok):
    names = ("boolq", "arc", "obqa")
    samplers = []

    def make_sampler(sizes):
        samplers.append(TaskSampler(sizes, mode="proportional", seed=4))
        return samplers[-1]

    tokens = dict(zip(names, ["lm", "mqa", "gqa"]))
    kwargs = dict(data_dir=raw_dirs, batch_size=4, max_text_length=N, seed=2,
                  task_tokens=tokens, tokenizer=tok, make_sampler=make_sampler)
    rows = rows_of(pool_dataset(names, **kwargs), 60)
    sampler = samplers[0]
    sizes = [epoch_length(Formatter(tok, max_text_length=N).format_batch(
        registry.load_examples(name, "train", raw_dirs[name]))) for name in names]
    np.testing.assert_allclose(list(sampler.probabilities(1).values()),
                               np.array(sizes) / sum(sizes))
    batch_tasks = [{int(r[0][2]) for r in rows[i:i + 4]} for i in range(0, 240, 4)]
    assert all(len(tasks) == 1 for tasks in batch_tasks)
    expected = [vocab.task_token_id(tokens[t]) for t in sampler.schedule(0, 60)]
    assert [tasks.pop() for tasks in batch_tasks] == expected
    assert same_rows(rows_of(pool_dataset(names, start_batch=13, **kwargs), 47), rows[52:])


def test_pool_mixes_tasks_resumes_and_accepts_one_directory(raw_dirs, tok):
    root = raw_dirs["race"].parent
    kwargs = dict(batch_size=4, max_text_length=N, seed=0, tokenizer=tok)
    full = rows_of(pool_dataset(data_dir=root, **kwargs), 12)
    tasks = [{int(r[0][2]) for r in full[i:i + 4]} for i in range(0, 48, 4)]
    assert {vocab.task_token_id("mqa"), vocab.task_token_id("gqa")} in tasks
    assert same_rows(rows_of(pool_dataset(data_dir=raw_dirs, **kwargs), 12), full)
    for k in (1, 7):
        assert same_rows(rows_of(pool_dataset(data_dir=root, start_batch=k, **kwargs), 12 - k),
                         full[4 * k:])
    with pytest.raises(ValueError, match="not in"):
        pool_dataset(["race"], data_dir=root, task_tokens={"boolq": "lm"}, **kwargs)


def test_task_tokens_are_checked_against_the_output_blocks():
    config = NeMoTConfig.preset("tiny")  # blocks lm, mqa, gqa
    check_task_tokens(dataset_task_tokens(SEED_DATASETS), config)
    check_task_tokens({"c4": "lm", "race": "<lm>"}, config)
    with pytest.raises(ValueError, match=r"dataset race: <pmqa> at auxiliary position 2 "
                                         r".*output blocks \['lm', 'mqa', 'gqa'\]"):
        check_task_tokens({"race": "pmqa", "boolq": "gqa"}, config)
    with pytest.raises(ValueError, match="no task token"):
        check_task_tokens({"race": "nonsense"}, config)
    assert dataset_task_tokens(["race", "boolq"], {"boolq": "lm"}) == {"race": "mqa",
                                                                     "boolq": "lm"}


def test_bad_arguments_are_clear_errors(raw_dirs, tmp_path, tok):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        qa_dataset("race", "train", data_dir=tmp_path / "nowhere", batch_size=2)
    with pytest.raises(ValueError, match="batch_size"):
        qa_dataset("race", "train", data_dir=raw_dirs["race"], batch_size=0, max_text_length=N,
                   tokenizer=tok)
    with pytest.raises(ValueError, match="splits"):
        qa_dataset("race", "training", data_dir=raw_dirs["race"], batch_size=2, tokenizer=tok)


def test_a_generator_dataset_has_its_length_and_raises_its_own_errors():
    """The tf.data view every generator-fed stream uses (QA, the T5 mixture, PALs, NGT): a
    finite stream's exact length, and a DataError raised mid-stream reaching the trainer as
    itself, not as tf.data's OpError."""
    import tensorflow as tf

    signature = (tf.TensorSpec((None,), tf.int32), tf.TensorSpec((None,), tf.float32))

    def batches(bad_at=None):
        for k in range(3):
            if k == bad_at:
                raise DataError("train.jsonl", 7, "label", "0 or 1", got="2")
            yield np.full(2, k, "int32"), np.zeros(2, "float32")

    ds = generator_dataset(batches, signature, batches=3)
    assert int(ds.cardinality()) == 3 and [int(x[0]) for x, _ in ds] == [0, 1, 2]
    with pytest.raises(DataError, match=r"train.jsonl: line 7: field 'label'"):
        with python_errors():
            list(generator_dataset(lambda: batches(bad_at=1), signature))


# Minor page faults of 20 eager 8 MB tensors (after 20 more: the steady state of a training
# loop) once a generator dataset has run, first with
# TensorFlow's allocator patch kept (every tensor a fresh mmap: ~2,000 faults each), then
# with nemot's setting (the freed heap reused). Its own process: the allocator's state is
# per process, and tests before this one in a worker may have set it. With TensorFlow's
# oneDNN operations off: where they are on (its default on CPUs with AVX512_VNNI, AVX_VNNI,
# AVX512_BF16 or AMX) tensors come from oneDNN's pooling allocator, not from malloc, and
# the patch costs nothing (1 fault instead of 39,081, measured on such a machine).
FAULTS_SCRIPT = """
import json, os, resource
import numpy as np
import tensorflow as tf
from nemot.data.batching import generator_dataset

def faults_after_a_generator_dataset():
    spec = tf.TensorSpec([2], tf.int32)
    for _ in generator_dataset(lambda: iter([np.zeros(2, np.int32)] * 3), spec):
        pass
    def allocate():
        for _ in range(20):
            float(tf.reduce_sum(tf.fill([2_000_000], 1.0)))

    allocate()                        # the first use of each thread's heap faults anyway
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    allocate()
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

os.environ["NEMOT_TF_MEMORY_PATCH"] = "keep"
kept = faults_after_a_generator_dataset()
del os.environ["NEMOT_TF_MEMORY_PATCH"]
print(json.dumps({"tensorflow": kept, "nemot": faults_after_a_generator_dataset()}))
"""


def test_generator_datasets_leave_freed_memory_for_reuse():
    import json
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FAULTS_SCRIPT], capture_output=True,
                          text=True, timeout=300, env=dict(os.environ, TF_ENABLE_ONEDNN_OPTS="0"))
    assert done.returncode == 0, done.stderr[-2000:]
    faults = json.loads(done.stdout.strip().splitlines()[-1])
    pages = 20 * 8_000_000 // 4096                    # every page of every tensor: 39,062
    assert faults["tensorflow"] > pages / 2, faults  # TensorFlow's patch: fresh pages each time
    # ours: the freed heap is reused. Alone ~0 faults; on a loaded machine a few tensors
    # still land in fresh pages (3,907 measured during the suite, 2026-11-27).
    assert faults["nemot"] < pages / 4, faults
