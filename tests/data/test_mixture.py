"""The mixture: proportional (capped) sampling per example, exact resumption, the model's
batches, and scoring dev sets by ranking candidate targets."""

import itertools

import numpy as np
import pytest

from nemot.data.benchmarks import mixture as data
from nemot.data.benchmarks.mixture import IGNORE, Mixture, TokenizedTask, model_batch, token_ids
from nemot.data.synthetic import glue as synthetic
from nemot.evaluation.rank_classification import score
from nemot.hosts.t5 import load_tokenizer


def toy_mixture(sizes, cap=None, seed=0):
    tasks = [TokenizedTask(key, [(np.array([i, 1]), np.array([t, 1])) for i in range(n)], [])
             for t, (key, n) in enumerate(sizes.items())]
    return Mixture(tasks, tokenizer=None, max_input_length=4, max_target_length=3, cap=cap,
                   seed=seed)


def test_examples_are_drawn_in_proportion_to_task_size_with_an_optional_cap():
    mixture = toy_mixture({"glue/MNLI": 300, "glue/RTE": 100})
    drawn = [t for t, _ in itertools.islice(mixture.examples(), 8000)]
    assert np.mean(np.array(drawn) == 0) == pytest.approx(0.75, abs=0.02)
    capped = toy_mixture({"glue/MNLI": 300, "glue/RTE": 100}, cap=100)
    drawn = [t for t, _ in itertools.islice(capped.examples(), 8000)]
    assert np.mean(np.array(drawn) == 0) == pytest.approx(0.5, abs=0.02)


def test_each_task_passes_over_its_examples_once_per_epoch_and_resumes_exactly():
    mixture = toy_mixture({"glue/MNLI": 30, "glue/RTE": 10})
    stream = list(itertools.islice(mixture.examples(), 400))
    rte = [int(pair[0][0]) for t, pair in stream if t == 1]
    assert sorted(rte[:10]) == list(range(10)) and sorted(rte[10:20]) == list(range(10))
    assert rte[:10] != rte[10:20]  # a new order per pass
    resumed = list(itertools.islice(mixture.examples(start_example=123), 50))
    assert [(t, int(p[0][0])) for t, p in resumed] == [(t, int(p[0][0])) for t, p in stream[123:173]]
    first = next(toy_mixture({"glue/MNLI": 30, "glue/RTE": 10}).train_batches(3, 8))
    again = list(itertools.islice(mixture.train_batches(0, 8), 4))[3]
    np.testing.assert_array_equal(first[0]["encoder_token_ids"], again[0]["encoder_token_ids"])


def test_model_batch_shifts_targets_into_the_decoder():
    x, y = model_batch([np.array([5, 6, 1]), np.array([7, 1])], [np.array([8, 9, 1]),
                                                                  np.array([4, 1])],
                       [0, 3], max_input_length=4, max_target_length=4)
    np.testing.assert_array_equal(x["encoder_token_ids"], [[5, 6, 1, 0], [7, 1, 0, 0]])
    np.testing.assert_array_equal(x["encoder_padding_mask"], [[1, 1, 1, 0], [1, 1, 0, 0]])
    np.testing.assert_array_equal(y, [[8, 9, 1, IGNORE], [4, 1, IGNORE, IGNORE]])
    np.testing.assert_array_equal(x["decoder_token_ids"], [[0, 8, 9, 1], [0, 4, 1, 0]])
    np.testing.assert_array_equal(x["decoder_padding_mask"], [[1, 1, 1, 0], [1, 1, 0, 0]])
    np.testing.assert_array_equal(x["task_index"], [0, 3])


@pytest.fixture(scope="module")
def benchmark(tmp_path_factory):
    out = synthetic.write_benchmark(tmp_path_factory.mktemp("synthetic"), train_size=16,
                                    dev_size=24)
    tokenizer = load_tokenizer(str(out))
    return data.load_mixture(tokenizer, out / "glue", out / "superglue", max_input_length=64,
                             max_target_length=16)


def oracle(mixture, right=0.0, wrong=-5.0):
    """A scorer that knows every dev example's gold targets."""
    gold = set()
    for task in mixture.tasks:
        for dev in task.dev:
            inputs = token_ids(mixture.tokenizer, [e.inputs for e in dev.examples], 64)
            for ids, example in zip(inputs, dev.examples):
                for target in token_ids(mixture.tokenizer, list(example.targets), 16):
                    gold.add((tuple(ids), tuple(target)))

    def scorer(x, y):
        rows = []
        for enc, mask, target in zip(x["encoder_token_ids"], x["encoder_padding_mask"], y):
            key = (tuple(enc[mask == 1]), tuple(target[target != IGNORE]))
            rows.append(right if key in gold else wrong)
        return np.array(rows)

    return scorer


def test_scoring_ranks_candidates_into_every_benchmark_metric(benchmark):
    assert len(benchmark.tasks) == 16 and benchmark.keys[0] == "glue/CoLA"
    scores = score(benchmark, oracle(benchmark), batch_size=50)
    # (the synthetic STS-B scores are whole numbers, so the 0.2-rounded targets are exact)
    assert len(scores) == 3 + 9 + 8 and all(v == pytest.approx(100.0) for v in scores.values()), \
        scores
    inverted = score(benchmark, oracle(benchmark, right=-5.0, wrong=0.0), batch_size=50)
    assert inverted["superglue/BoolQ"] == 0.0 and inverted["glue/RTE"] == 0.0


def test_candidates_cut_to_the_same_tokens_are_an_error(benchmark):
    short = Mixture(benchmark.tasks, benchmark.tokenizer, 64, max_target_length=2)
    with pytest.raises(ValueError, match=r"glue/CoLA: candidate targets \['unacceptable', "
                                         r"'acceptable'\] are not all different once cut to "
                                         r"max_target_length=2"):
        score(short, oracle(benchmark))
