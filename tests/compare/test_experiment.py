"""The comparison's recipe: the whole comparison at tiny size on generated minBERT files
(all six variants, one seed, a few steps, the report and its figure), its data splits
and encoding, its config errors, and every variant of the thesis-pool config built at tiny
size."""

import dataclasses
import json
import math

import keras
import numpy as np
import pytest

from nemot import vocab

from nemot.experiments import cli as runs_cli

from nemot.compare import pool
from nemot.compare import experiment as compare
from nemot.data.benchmarks.minbert import Rows
from nemot.experiments import protocol
from tests.compare.helpers import write_minbert_layout

MINBERT = "configs/compare/minbert.toml"
POOL = "configs/compare/thesis_pool.toml"
VARIANTS = ["none", "nemot_gate", "ngt_block", "pals", "hypergrid", "modulated_ffn"]
METRICS = ["sst_accuracy", "quora_accuracy", "sts_pearson", "score", "added_parameters",
           "step_time_ratio"]


def tiny(data_dir, out):
    """Overrides: the shipped config at tiny size, 1 training step, 1 timing step, run
    eagerly (tracing each variant's step would cost more than its few steps; the shipped
    config's graph mode is what the real run uses). An eager step of a variant is ~0.6
    CPU s: the test runs 6 for training and 8 for timing (7 runs' and the retime's)."""
    return [f"data.dir={json.dumps(str(data_dir))}", f"output_dir={json.dumps(str(out))}",
            "seeds=[0]", "model.d_model=16", "model.d_ff=32", "model.num_heads=2",
            "model.num_layers=2", "data.sequence_length=12", "train.batch_size=4",
            "train.epochs=1", "train.steps_per_epoch=1", "train.timing_steps=1",
            "train.timing_rounds=1", "train.run_eagerly=true",
            "variants.nemot_gate.nm_layers=2", "variants.ngt_block.position=1", "variants.pals.hidden_size=6",
            "variants.pals.num_heads=2", "variants.hypergrid.grid=[4, 16]",
            "variants.hypergrid.heads=2"]


def strict_json(path):
    def refuse(constant):
        raise ValueError(f"{path}: {constant} is not JSON")
    return json.loads(path.read_text(), parse_constant=refuse)


def test_the_whole_comparison_at_tiny_size(tmp_path):
    data_dir = write_minbert_layout(tmp_path / "minbert")
    out = protocol.run_config(MINBERT, overrides=tiny(data_dir, tmp_path / "out"),
                          log=lambda line: None)
    for variant in VARIANTS:
        metrics = json.loads((out / variant / "seed0" / "metrics.json").read_text())
        assert list(metrics) == METRICS, variant
        assert all(math.isfinite(v) for v in metrics.values())
        assert 0 <= metrics["sst_accuracy"] <= 1 and 0 <= metrics["quora_accuracy"] <= 1
        assert metrics["score"] == pytest.approx((metrics["sst_accuracy"]
                                                  + metrics["quora_accuracy"]
                                                  + (metrics["sts_pearson"] + 1) / 2) / 3)
        assert metrics["step_time_ratio"] > 0
        assert (metrics["added_parameters"] == 0) == (variant == "none")
        details = json.loads((out / variant / "seed0" / "details.json").read_text())
        # Quora's dev file (40 rows) is split 80/20 with the split seed; SST keeps its files.
        assert details["examples"]["quora"]["train"] == 32
        assert details["examples"]["quora"]["test"] == 8
        assert details["examples"]["sst"]["test_file"].endswith("ids-sst-dev.csv")
    # `nemot runs retime`: one variant's step time measured again, written into its files,
    # then the report (of every run, as `nemot runs report` writes it) with the figure
    before = json.loads((out / "pals" / "seed0" / "metrics.json").read_text())
    assert runs_cli.main(["retime", str(out), "--variants", "pals"]) == 0
    report = strict_json(out / "report.json")
    assert list(report["summary"]) == VARIANTS
    # every mechanism against `none`, as mechanism minus none
    tests = report["tests"]["score"]
    for variant in VARIANTS[1:]:
        mean = report["summary"][variant]["score"]["mean"]
        base = report["summary"]["none"]["score"]["mean"]
        assert tests[f"{variant} vs none"]["difference"] == pytest.approx(mean - base)
    assert report["summary"]["none"]["score"]["sd"] is None  # one seed: no SD, null
    assert (out / "comparison.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "comparison.png" in (out / "report.md").read_text()
    # what it cost: every run's phases, summed
    cost = report["cost"]
    assert list(cost["variants"]) == VARIANTS
    assert all(v["runs"] == 1 and v["mean_seconds"]["train"] > 0
               for v in cost["variants"].values())
    assert cost["total_seconds"] == pytest.approx(
        sum(v["total_seconds"] for v in cost["variants"].values()))
    assert "## Cost" in (out / "report.md").read_text()
    after = json.loads((out / "pals" / "seed0" / "metrics.json").read_text())
    assert {k: v for k, v in after.items() if k != "step_time_ratio"} == {
        k: v for k, v in before.items() if k != "step_time_ratio"}
    timing = json.loads((out / "pals" / "seed0" / "details.json").read_text())["timing_seconds"]
    assert timing["clock"] == "process_time" and "retimed" in timing
    assert after["step_time_ratio"] == pytest.approx(
        np.median([m / b for m, b in timing["variant_none_per_round"]]))
    none_timing = json.loads((out / "none" / "seed0" / "details.json").read_text())
    assert "retimed" not in none_timing["timing_seconds"]  # only the variants named
    assert runs_cli.main(["retime", str(out), "--variants", "adapters"]) == 1  # named error


def test_splits_and_the_encoding(tmp_path):
    data_dir = write_minbert_layout(tmp_path / "minbert", count=50)
    experiment = compare.load(MINBERT, [f"data.dir={json.dumps(str(data_dir))}"])
    train, test = compare.read_splits(experiment.data)
    assert (len(train["quora"]), len(test["quora"])) == (40, 10)
    again, _ = compare.read_splits(experiment.data)
    assert again["quora"].text_a == train["quora"].text_a  # the split seed fixes it
    assert len(train["sst"]) == len(test["sst"]) == 50

    encoder = compare.Encoder(train.values(), sequence_length=8)
    assert encoder.vocab_size == 4 + len({i for rows in train.values()
                                          for texts in (rows.text_a, rows.text_b or ())
                                          for ids in encoder.tokenizer.encode_batch(list(texts))
                                          for i in ids})
    unseen = Rows("sts", "x", ("zebra quagga",), ("the film",), np.zeros(1, "float32"))
    ids = encoder.encode(unseen)[0].tolist()
    # [CLS] a [SEP] b [SEP], the longer side cut first; unseen tokens are [UNK]
    assert ids[0] == compare.CLS and ids.count(compare.SEP) == 2
    assert compare.UNK in ids and len(ids) == 8
    long = encoder.pack(list(range(10, 20)), [30, 31])
    assert long == [compare.CLS, 10, 11, 12, compare.SEP, 30, 31, compare.SEP]


def test_the_data_are_prepared_once_per_process_while_the_files_are_unchanged(tmp_path):
    data_dir = write_minbert_layout(tmp_path / "minbert", count=20)
    data = compare.load(MINBERT, [f"data.dir={json.dumps(str(data_dir))}"]).data
    prepared = compare.prepare(data)
    assert compare.prepare(data) is prepared
    train, test = compare.read_splits(data)
    fresh = compare.Encoder(train.values(), data.sequence_length)
    for task in data.tasks:
        assert np.array_equal(prepared.train_ids[task], fresh.encode(train[task]))
        assert np.array_equal(prepared.test_ids[task], fresh.encode(test[task]))
    # a rewritten file is read again
    write_minbert_layout(data_dir, count=30, seed=1)
    again = compare.prepare(data)
    assert again is not prepared and len(again.train_rows["sst"]) == 30
    other = dataclasses.replace(data, sequence_length=10)
    assert compare.prepare(other).train_ids["sst"].shape == (30, 10)


def test_every_run_of_a_process_is_timed_against_one_none_model_traced_once():
    experiment = compare.load(MINBERT, ["model.d_model=16", "model.d_ff=32",
                                        "model.num_heads=2", "model.num_layers=2",
                                        "variants.ngt_block.position=1",
                                        "data.sequence_length=8", "train.batch_size=2"])
    none = compare.settings(experiment, "pals", vocab_size=20, mechanism="none")
    baseline = compare.timing_baseline(none, experiment.train, seed=0)
    keras.backend.clear_session()  # as between the runs of `nemot runs`
    assert compare.timing_baseline(none, experiment.train, seed=1) is baseline
    traces = []
    step = baseline.train_step
    baseline.train_step = lambda data: traces.append(1) or step(data)
    inputs = {"token_ids": np.ones((4, 8), "int32"), "task_index": np.arange(4) % 3}
    targets = np.stack([inputs["task_index"], np.zeros(4)], axis=1).astype("float32")
    for _ in range(2):
        baseline.fit(inputs, targets, batch_size=2, epochs=1, verbose=0)
    assert len(traces) == 1
    wider = compare.settings(experiment, "pals", vocab_size=21, mechanism="none")
    assert compare.timing_baseline(wider, experiment.train, seed=0) is not baseline


def test_config_errors_name_the_file_and_key(tmp_path):
    with pytest.raises(ValueError, match=r"minbert.toml: \[variants.pals\]: mechanism "
                                         r"'pal': expected one of"):
        compare.load(MINBERT, ["variants.pals.mechanism=pal"])
    with pytest.raises(ValueError, match=r"\[variants.ngt_block\]: ngt_block: position=9: "
                                         r"expected 1 <= k < 4"):
        compare.load(MINBERT, ["variants.ngt_block.position=9"])
    with pytest.raises(ValueError, match=r"minbert.toml: \[train\]: unknown key\(s\) "
                                         r"\['steps'\]"):
        compare.load(MINBERT, ["train.steps=3"])
    with pytest.raises(ValueError, match=r"\[data\]: vocabulary='bert': expected one of"):
        compare.load(MINBERT, ["data.vocabulary=bert"])
    with pytest.raises(ValueError, match=r"override 'variants.adapters.x=1': no "
                                         r"\[variants.adapters\]"):
        compare.load(MINBERT, ["variants.adapters.x=1"])


def test_every_variant_of_the_thesis_pool_config_builds_at_tiny_size():
    overrides = ['model.preset="tiny"', 'gpt2=""', "variants.pals.hidden_size=6",
                 "variants.hypergrid.grid=[4, 8]"]
    module, experiment = protocol.load(POOL, overrides)
    assert module is compare and isinstance(experiment, pool.Experiment)
    assert compare.variants(experiment) == VARIANTS
    ids = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(task), 5, 6, 7]
                    for task in ("mqa", "gqa")], "int32")
    plain = None
    for variant in VARIANTS:
        cfg = pool.run_config(experiment, variant, seed=0)
        assert cfg.model.output_blocks == ("mqa", "gqa") and cfg.loss.vanilla_weight == 0
        model = pool.build(experiment, variant, cfg)
        assert model({"token_ids": ids})["logits"].shape == (2, 3, vocab.VOCAB_SIZE)
        plain = plain or model.count_params()
        assert (model.count_params() > plain) == (variant != "none"), variant
    ngt = pool.build(experiment, "ngt_block", pool.run_config(experiment, "ngt_block", 0))
    assert ngt.backbone.gating == {"num_layers": 3, "position": 1}
    assert not ngt.backbone.supports_cache
