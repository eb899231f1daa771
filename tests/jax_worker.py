"""Every model on Keras's JAX backend, in a process of its own (the backend is fixed at
import): ``KERAS_BACKEND=jax python -m tests.jax_worker OUT.json [RUNS]``; with ``RUNS``
(a directory) the same process also runs tests/training/jax_runs.py (:func:`main`), as
the test run does.

Runs, at tiny sizes, what tests/test_jax_backend.py checks: NeMoT and the GPT-2
baseline train a ``fit`` step (dropout on, a batch mixing tasks) and decode with their
caches exactly as by recomputation, NeMoT also hosting each modulation kind (PALs,
modulated FFN, HyperGrid); NGT, PALBert, HyperGridT5 and the modulated-activation CNN and
LSTM train a step; fused attention (outputs and gradients on every mask NeMoT builds,
tests/layers/attention_cases.py), a padded vocabulary against the unpadded model
(tests/models/test_vocab_padding.py), the tiny preset's golden logits
(tests/models/test_golden.py), the lean loss and the dropout masks (both JAX generators)
match their TensorFlow-tested properties; the output set's loop over its blocks' stacked
weights gives the logits and gradients of a branch per block, and a model recomputing
each layer in the backward pass (``remat_layers``) those of one keeping its activations;
the block update guard under ``keras.distribution.DataParallel`` on two CPU devices
(``XLA_FLAGS=--xla_force_host_platform_device_count=2``, set by the caller).

Compiling is most of the cost, so one model serves several checks where they do not
interfere: the unpadded model of the padded-vocabulary pair is also the unfused side of
the fused-attention comparison and then NeMoT's ``fit`` step and decoding, all through
one compiled forward pass.
"""

import gc
import json
import sys
import traceback
from pathlib import Path

import numpy as np

from tests.training import jax_runs


class Jitted:
    """``model``'s inference forward pass as one ``jax.jit`` program, compiled once per
    input shape, with the weights as arguments (Keras's ``stateless_call``): each call
    reads them as they are then, so one program serves later weights too. An eager JAX
    call dispatches, and at first use compiles, every operation on its own. Enough of a
    model for ``generate_by_recomputation``."""

    def __init__(self, model):
        import jax

        self.config = model.config
        self._model = model

        def forward(trainable, non_trainable, inputs):
            outputs, _ = model.stateless_call(trainable, non_trainable, inputs, training=False)
            return outputs

        self._forward = jax.jit(forward)

    def __call__(self, inputs, training=False):
        assert not training
        return self._forward([v.value for v in self._model.trainable_variables],
                             [v.value for v in self._model.non_trainable_variables], inputs)


def fit_and_decode(model, tasks, vocab, forward=None):
    """One ``fit`` step on a batch of ``tasks``; cached and recomputed greedy decoding
    (recomputed by ``forward``, the model's :class:`Jitted`, made here if not given)."""
    import keras

    from nemot.models.generation import generate, generate_by_recomputation, has_cache

    rng = np.random.default_rng(0)
    text = rng.integers(0, 1000, (len(tasks), 12)).astype("int32")
    aux = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t)] for t in tasks],
                   "int32")
    y = {"task_targets": np.roll(text, -1, 1), "lm_targets": np.roll(text, -1, 1)}
    model.compile(keras.optimizers.Adam(1e-3))
    history = model.fit({"token_ids": np.concatenate([aux, text], 1)}, y,
                        batch_size=len(tasks), verbose=0)
    prompts = [list(aux[i]) + list(text[i, :3 + i]) for i in range(2)]
    cached = generate(model, prompts, max_new_tokens=4, stop_token_ids=())
    forward = forward or Jitted(model)
    out = {"loss": history.history["loss"][-1], "cached": cached,
           "recomputed": generate_by_recomputation(forward, prompts, max_new_tokens=4,
                                                   stop_token_ids=())}
    if not has_cache(model):
        # generate's compiled forward pass reads the weights when it runs: new ones count
        # (and the reference, compiled above, reads them too).
        model.head.kernel.assign(np.roll(np.asarray(model.head.kernel), 7, axis=1))
        out["after_update"] = {
            "generated": generate(model, prompts, max_new_tokens=4, stop_token_ids=()),
            "recomputed": generate_by_recomputation(forward, prompts, max_new_tokens=4,
                                                    stop_token_ids=())}
    return out


def loss_terms(model, y, outputs):
    """``model``'s three loss terms as floats, in one compiled program."""
    import jax

    terms = jax.jit(lambda y, outputs: {term: value for term, (_, value)
                                        in model.nemot_loss.terms(y, outputs).items()})
    return {term: float(value) for term, value in terms(y, outputs).items()}


def padded_vocabulary(nemot, vocab):
    """The padded model (``vocab_padding=64``) against the unpadded one of the same seed:
    largest logit difference, the three loss terms of each, and greedy ids (the padded
    model's cached through KerasHub's sampler, both recomputed). Also returns the
    unpadded model (unfused attention) and its compiled forward pass, for
    :func:`fused_attention_difference`."""
    import keras

    from nemot.models.generation import generate, generate_by_recomputation

    cfg = nemot.NeMoTConfig.preset("tiny").replace(
        num_vanilla_layers=1, num_nm_layers=1, output_blocks=("lm", "gqa"), max_text_length=16,
        attention_implementation="unfused")
    # Prompts of 3 and 4 text tokens and 4 new ones: recomputation runs [2, 3 + 8] ids, the
    # shape of the scored batch, so each model's forward pass compiles once.
    text = np.random.default_rng(2).integers(0, 1000, (2, 8)).astype("int32")
    aux = np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t)] for t in ("lm", "gqa")],
                   "int32")
    y = {"task_targets": np.roll(text, -1, 1), "lm_targets": np.roll(text, -1, 1)}
    prompts = [list(aux[i]) + list(text[i, :3 + i]) for i in range(2)]
    out = {"terms": {}, "recomputed": {}}
    logits, models = {}, {}
    for padding in (1, 64):
        keras.utils.set_random_seed(11)
        model = nemot.build_model(cfg.replace(vocab_padding=padding), preprocessor=None)
        forward = Jitted(model)
        models[padding] = model, forward
        outputs = forward({"token_ids": np.concatenate([aux, text], 1)})
        logits[padding] = np.asarray(outputs["logits"])
        out["terms"][padding] = loss_terms(model, y, outputs)
        out["recomputed"][padding] = generate_by_recomputation(
            forward, prompts, max_new_tokens=4, stop_token_ids=())
    out["cached_padded"] = generate(model, prompts, max_new_tokens=4, stop_token_ids=())
    out["width"] = logits[64].shape[-1]
    out["logit_difference"] = float(np.abs(logits[64] - logits[1]).max())
    return out, models[1]


def fused_attention_difference(nemot, vocab, unfused, forward):
    """Largest logit difference between fused attention and the model ``unfused`` (its
    compiled ``forward``) with the same weights, ``<dec>`` and ``<enc>``, with padding:
    [2, 3 + 8] ids, the shape ``forward`` was compiled for."""
    fused = nemot.build_model(unfused.config.replace(attention_implementation="fused"),
                              preprocessor=None)
    fused.set_weights(unfused.get_weights())
    text = np.arange(1, 17, dtype="int32").reshape(2, 8)
    text[1, 5:] = vocab.PAD_ID
    aux = np.array([[vocab.CLS_ID, mode, vocab.task_token_id("lm")]
                    for mode in (vocab.DEC_ID, vocab.ENC_ID)], "int32")
    ids = {"token_ids": np.concatenate([aux, text], 1)}
    out = [np.asarray(f(ids)["logits"]) for f in (Jitted(fused), forward)]
    return float(np.abs(out[0] - out[1]).max())


def loss_difference(vocab):
    """Lean loss against Keras's float32 softmax cross-entropy (relative)."""
    import jax
    import keras
    from keras import ops

    from nemot.models.losses import masked_cross_entropy

    rng = np.random.default_rng(1)
    logits = ops.cast((rng.normal(size=(2, 5, vocab.VOCAB_SIZE)) * 4).astype("float32"),
                      "bfloat16")
    targets = rng.integers(0, vocab.VOCAB_SIZE, (2, 5)).astype("int32")

    @jax.jit
    def both(targets, logits):
        total, _ = masked_cross_entropy(targets, logits)
        return total, ops.sum(keras.losses.sparse_categorical_crossentropy(
            targets, ops.cast(logits, "float32"), from_logits=True))

    total, expected = both(targets, logits)
    return float(abs(total - expected) / expected)


def dropout_rates():
    """Keep rate of both JAX generators and the correlation of two salted masks (each
    drawn by one compiled program, as in a training step)."""
    import jax
    import keras
    from keras import ops

    from nemot import backend
    from nemot import dropout as drop

    seed = drop.draw_seed(keras.random.SeedGenerator(3), True)
    out = {}
    for impl in ("threefry", "rbg"):
        bits = jax.jit(lambda s: backend.random_bits((256, 1024), s, impl=impl))(seed)
        draws = np.concatenate([np.asarray(bits) & 0xFFFF, np.asarray(bits) >> 16], 1)
        out[impl] = float((draws < drop.keep_threshold(0.1)).mean())
    mask = jax.jit(lambda s, salt: drop.dropout(ops.ones((256, 1024)), 0.5,
                                                drop.salted(s, salt)) > 0)
    a, b = np.asarray(mask(seed, 0)), np.asarray(mask(seed, 1))
    out["salt_correlation"] = float(np.corrcoef(a.ravel(), b.ravel())[0, 1])
    return out


def stacked_output_blocks(nemot):
    """The loops over stacked weights (the output set's over its blocks, each stack's over
    its layers: ``scan_layers``) against a branch per block and unrolled layers: logits
    and gradients of a training call (dropout on; the batch selects two blocks of three,
    so the third's gradient is zero), and how many loops ran; then the loops' against the
    same model recomputing each layer in the backward pass (``remat_layers``). Returns
    the two comparisons."""
    from nemot import config, vocab
    from nemot.layers import sets

    cfg = nemot.NeMoTConfig.preset("tiny").replace(
        num_vanilla_layers=2, num_nm_layers=2, num_output_layers=2,
        output_blocks=config.THESIS_OUTPUT_BLOCKS[:3], max_text_length=8)
    model = nemot.build_model(cfg)
    tasks = [cfg.output_blocks[i] for i in (0, 1, 1)]
    text = np.random.default_rng(2).integers(0, 1000, (3, 8)).astype("int32")
    ids = {"token_ids": np.concatenate(
        [np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t)] for t in tasks],
                  "int32"), text], 1)}
    weights = np.random.default_rng(3).normal(size=(3, 8, cfg.vocab_size)).astype("float32")
    stacked_calls, scanned_calls = [], []
    call_stacked, scanned = sets.OutputSet._call_stacked, sets._ConfiguredLayer._scanned

    def counted(self, *args, **kwargs):
        stacked_calls.append(1)
        return call_stacked(self, *args, **kwargs)

    def counted_scan(self, *args, **kwargs):
        scanned_calls.append(self.name)
        return scanned(self, *args, **kwargs)

    backbone, results = model.backbone, []
    for stacked in (True, False):
        sets.OutputSet._call_stacked = counted
        sets._ConfiguredLayer._scanned = counted_scan
        backbone.output_set.stack_blocks = stacked
        for stack in (backbone.vanilla_set, backbone.neuromodulatory_set,
                      *backbone.output_set.blocks.values()):
            stack.scan_layers = stacked
        try:
            results.append(training_gradients(model, ids, weights))
        finally:
            sets.OutputSet._call_stacked = call_stacked
            sets._ConfiguredLayer._scanned = scanned
    names = [v.path for v in model.trainable_variables]
    unused = f"block_{cfg.output_blocks[2]}/"
    ga = results[0][1]
    stacked = {"stacked_calls": len(stacked_calls), "scanned": sorted(set(scanned_calls)),
               **differences(*results),
               "unselected_block_gradient": max(float(np.abs(g).max())
                                                for g, name in zip(ga, names) if unused in name),
               "unselected_block_variables": sum(unused in name for name in names)}
    # The same model recomputing each layer in the backward pass (remat_layers; inside
    # the loops over the layers), with the same weights and dropout generator states,
    # against the loops' logits and gradients.
    recomputing = nemot.build_model(cfg.replace(remat_layers=True, scan_layers=True))
    for mine, theirs in zip(recomputing.variables, model.variables):
        mine.assign(theirs)
    return stacked, differences(results[0], training_gradients(recomputing, ids, weights))


def training_gradients(model, ids, weights):
    """The logits of a jitted training call (dropout on) and the gradients of
    ``sum(logits * weights)`` with respect to the trainable variables."""
    import jax
    from keras import ops

    non_trainable = [v.value for v in model.non_trainable_variables]

    def loss(trainable):
        outputs, _ = model.stateless_call(trainable, non_trainable, ids, training=True)
        return ops.sum(ops.cast(outputs["logits"], "float32") * weights), outputs["logits"]

    grad, logits = jax.jit(jax.grad(loss, has_aux=True))(
        [v.value for v in model.trainable_variables])
    return np.asarray(logits), [np.asarray(g) for g in grad]


def differences(first, second):
    """The largest differences of two :func:`training_gradients`, with their scales."""
    (a, ga), (b, gb) = first, second
    return {"logits": float(np.abs(a - b).max()), "largest_logit": float(np.abs(a).max()),
            "gradient": max(float(np.abs(x - y).max()) for x, y in zip(ga, gb)),
            "largest_gradient": max(float(np.abs(x).max()) for x in ga)}


def ngt_fit():
    import keras
    import keras_hub

    from nemot.ngt.model import NGTModel

    backbone = keras_hub.models.BertBackbone(vocabulary_size=50, num_layers=2, num_heads=2,
                                             hidden_dim=8, intermediate_dim=16,
                                             max_sequence_length=16)
    model = NGTModel(backbone, gate_position=1, num_gating_layers=1)
    model.compile(keras.optimizers.Adam(1e-3), loss="binary_crossentropy")
    x = {"token_ids": np.ones((4, 6), "int32"), "segment_ids": np.zeros((4, 6), "int32"),
         "padding_mask": np.ones((4, 6), "int32")}
    history = model.fit(x, np.array([0, 1, 0, 1], "float32"), batch_size=4, verbose=0)
    return history.history["loss"][-1]


# NeMoT hosting every modulation kind (dropout on, mixed tasks, decoding), in two models
# (a layer hosts one activation modulation): PALs (no cache: decoded by recomputation)
# with HyperGrid's output gate; the modulated FFN with HyperGrid's weight grids (cached).
NEMOT_MODULATIONS = {
    "pals_og": [{"kind": "pals", "sets": ["vanilla"], "hidden_size": 8, "num_heads": 2},
                {"kind": "hypergrid_og", "sets": ["output"], "gates": 16,
                 "conditioning": "context"}],
    "ffn_hypergrid": [{"kind": "modulated_ffn", "sets": ["output"],
                       "context": "neuromodulatory", "mod_units": "d_ff", "tau": "2sigmoid",
                       "position": "pre"},
                      {"kind": "hypergrid", "sets": ["vanilla"], "mode": "L2", "grid": [4, 8],
                       "conditioning": "task"},
                      {"kind": "hypergrid", "sets": ["output"], "mode": "LG", "grid": [8, 4],
                       "conditioning": "context", "placement": "ffn1"}],
}


def pals_fit():
    """PALBert (one layer: XLA compiles the step): one ``fit`` step on a batch mixing its
    three tasks."""
    import keras

    from nemot.pals.model import PALBert, PALsLoss

    model = PALBert(40, 1, 2, 8, 16, max_sequence_length=8, pals={"hidden_size": 4,
                                                                   "num_heads": 2})
    model.compile(keras.optimizers.Adam(1e-3), loss=PALsLoss(model.tasks))
    rng = np.random.default_rng(0)
    x = {"token_ids": rng.integers(5, 40, (6, 8)).astype("int32"),
         "segment_ids": np.zeros((6, 8), "int32"), "padding_mask": np.ones((6, 8), "int32"),
         "task_index": np.array([0, 1, 2, 0, 1, 2], "int32")}
    y = np.stack([x["task_index"], [1, 0, 2.5, 3, 1, 0.5]], 1).astype("float32")
    return model.fit(x, y, batch_size=6, verbose=0).history["loss"][-1]


def hypergrid_fit():
    """HyperGridT5 (LG grids, T′ from the layers' own self-attention) with dropout: one
    ``fit`` step."""
    import keras
    import keras_hub

    from nemot.hypergrid.model import HyperGridT5

    # One layer each side: XLA's compile of the step is most of this test (10 s with two
    # layers, 5 s with one); the grids and T' are the same per layer.
    backbone = keras_hub.models.T5Backbone(vocabulary_size=64, num_layers=1, num_heads=2,
                                           hidden_dim=16, intermediate_dim=32, dropout=0.1,
                                           use_gated_activation=False)
    model = HyperGridT5(backbone, 2, {"mode": "LG", "grid": [4, 4]})
    model.compile(keras.optimizers.Adafactor(1e-3),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    x = {"encoder_token_ids": rng.integers(2, 64, (4, 7)).astype("int32"),
         "encoder_padding_mask": np.ones((4, 7), "int32"),
         "decoder_token_ids": rng.integers(2, 64, (4, 3)).astype("int32"),
         "decoder_padding_mask": np.ones((4, 3), "int32"),
         "task_index": np.array([0, 1, 0, 1], "int32")}
    y = rng.integers(2, 64, (4, 3)).astype("int32")
    return model.fit(x, y, batch_size=4, verbose=0).history["loss"][-1]


def modact_fit():
    """The modulated activations' CIFAR-10 CNN and modulated LSTM: one ``fit`` step each."""
    import keras

    from nemot.modact import models
    from nemot.modact.models import ModelConfig

    rng = np.random.default_rng(0)
    losses = {}
    for name, config, x, y in (
            ("cnn", ModelConfig("cnn", modulated=True),
             rng.normal(size=(4, 32, 32, 3)).astype("float32"), rng.integers(0, 10, 4)),
            ("lstm", ModelConfig("lstm", cell="modulated", hidden=8, tau="sigmoid",
                                 vocab_size=20, num_classes=3),
             rng.integers(1, 20, (4, 6)).astype("int32"), rng.integers(0, 3, 4))):
        model = models.build(config)
        model.compile(keras.optimizers.Adam(1e-3), loss="sparse_categorical_crossentropy")
        losses[name] = model.fit(x, y, batch_size=4, verbose=0).history["loss"][-1]
    return losses


def models(out):
    """Every check of the module docstring; writes the report to ``out``, with what each
    part cost this process (``cpu_seconds``, user + system)."""
    import keras

    import nemot
    from nemot import vocab
    from tests.layers import attention_cases
    from tests.models import routing_worker, test_golden

    assert keras.backend.backend() == "jax"
    cpu = {}
    last = [jax_runs.cpu_seconds()]

    def spent(part):
        now = jax_runs.cpu_seconds()
        cpu[part] = round(cpu.get(part, 0) + now - last[0], 1)
        last[0] = now

    report = {"routing": routing_worker._jax_main(2)}
    spent("routing")
    keras.distribution.set_distribution(None)
    keras.utils.set_random_seed(0)
    cfg = nemot.NeMoTConfig.preset("tiny").replace(
        num_vanilla_layers=1, num_nm_layers=1, output_blocks=("lm", "gqa"), max_text_length=20)
    report["padded_vocabulary"], (unpadded, forward) = padded_vocabulary(nemot, vocab)
    report["fused_attention_difference"] = fused_attention_difference(nemot, vocab, unpadded,
                                                                      forward)
    spent("padded_and_fused")
    # The unpadded model then trains and decodes: its forward pass, compiled for [2, 3 + 8]
    # ids, is the shape the recomputation runs.
    report["nemot"] = fit_and_decode(unpadded, ["lm", "gqa", "lm", "lm"], vocab, forward)
    report["baseline"] = fit_and_decode(nemot.build_baseline(cfg), ["lm"] * 4, vocab)
    for kind, specs in NEMOT_MODULATIONS.items():
        report[f"nemot_{kind}"] = fit_and_decode(nemot.build_model(cfg.replace(modulation=specs)),
                                                 ["lm", "gqa", "gqa", "lm"], vocab)
    spent("fit_and_decode")
    report["ngt_loss"] = ngt_fit()
    report["pals_loss"] = pals_fit()
    report["hypergrid_loss"] = hypergrid_fit()
    report["modact_losses"] = modact_fit()
    spent("other_models")
    report["golden_logits"] = test_golden.golden_logits(lambda m, x: Jitted(m)(x)).tolist()
    report["fused_attention_cases"] = {str(multiple): attention_cases.differences(multiple)
                                       for multiple in (None, 64)}
    report["loss_relative_difference"] = loss_difference(vocab)
    report["dropout"] = dropout_rates()
    spent("golden_attention_loss_dropout")
    report["stacked_output_blocks"], report["recomputed_layers"] = stacked_output_blocks(nemot)
    spent("stacked_output_blocks_and_recomputed_layers")
    report["cpu_seconds"] = cpu
    with open(out, "w") as handle:
        json.dump(report, handle)


def _guarded(part, error_file):
    """``part()``; if it raises, its traceback goes to ``error_file`` (and stderr) and
    False comes back."""
    try:
        part()
        return True
    except Exception:  # the other part still runs; the tests name the failure
        traceback.print_exc()
        Path(error_file).write_text(traceback.format_exc())
        return False


def _freeze_imports():
    """Keras, JAX, TensorFlow and nemot imported, and what the imports made frozen out of
    the garbage collector's sight, as in the suite's workers (tests/conftest.py's
    ``pytest_collection_finish``): each collection then walks only what the checks made."""
    import keras  # noqa: F401

    import nemot  # noqa: F401
    from nemot.training import trainer  # noqa: F401

    gc.collect()
    gc.freeze()


def main(out, runs=None):
    """The report to ``out``; with ``runs`` (a directory), also the report of
    tests/training/jax_runs.py in ``runs/report.json``, from this process: an import of
    JAX, Keras and TensorFlow less than two processes, and one compilation cache in memory.
    The killed run of jax_runs starts first (its own process, beside these checks). A part
    that fails leaves no report but its traceback, in ``out + ".error"`` or
    ``runs/error.txt``; the other part still runs."""
    _freeze_imports()
    if runs is None:
        return 0 if _guarded(lambda: models(out), f"{out}.error") else 1
    with jax_runs.processes(runs) as forks:
        victim = jax_runs.start(runs, forks)
        ok = _guarded(lambda: models(out), f"{out}.error")
        ok = _guarded(lambda: jax_runs.finish(runs, victim, forks),
                      Path(runs) / "error.txt") and ok
    return 0 if ok else 1


if __name__ == "__main__":
    from nemot import console

    console.end_without_collecting()  # the process ends with it
    sys.exit(main(*sys.argv[1:3]))
