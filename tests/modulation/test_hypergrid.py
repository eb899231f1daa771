"""HyperGrid weight gating and the output-gating ablation (nemot.modulation.hypergrid):
the paper's equations against independent numpy computations, the layer's guarantees
(per-example, causal, padding), parameter counts, the checkerboard toy, and NeMoT."""

import keras
import numpy as np
import pytest
from keras import ops

import nemot
from nemot import vocab
from nemot.modulation.hypergrid import (HyperGrid, HyperGridDense, OutputGate, TaskConditioning,
                                        block_shape, grid_product)
from nemot.training import NeMoTLoss

FFN2 = "feedforward_output_dense"
RNG = np.random.default_rng(0)


def sigmoid(v):
    return 1.0 / (1.0 + np.exp(-v))


def materialised(x, kernel, grid, residual=True):
    """``X @ ((residual + kron(Ĝ_b, 1)) ⊙ W)`` example by example (and position by position)."""
    n_in, n_out = kernel.shape
    d_r, d_c = grid.shape[-2:]
    ones = np.ones((n_in // d_r, n_out // d_c))
    out = np.zeros(x.shape[:2] + (n_out,))
    for b in range(x.shape[0]):
        for pos in range(x.shape[1]):
            g = grid[b] if grid.ndim == 3 else grid[b, pos]
            out[b, pos] = x[b, pos] @ ((float(residual) + np.kron(g, ones)) * kernel)
    return out


def dense(grid=(2, 4), mode="LG", conditioning="task", n_in=8, n_out=8, num_tasks=3, name=FFN2,
          **options):
    layer = HyperGridDense("abc,cd->abd", (None, n_out), "d", grid=grid, mode=mode,
                           conditioning=conditioning, num_tasks=num_tasks, name=name, **options)
    layer.build((None, None, n_in))
    return layer


def randomise(layer, scale=1.0, seed=0):
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign(rng.normal(0, scale, w.shape).astype("float32"))


def task_cond(*tasks):
    return {"task_index": np.array(tasks, "int32")}


def np_(t):
    return np.asarray(ops.convert_to_numpy(t), np.float64)


# ------------------------------------------------------------------ errors


def test_shape_and_divisibility_errors_are_clear():
    with pytest.raises(ValueError, match=r"grid \(d_r, d_c\) = \(3, 4\) does not divide the "
                                         r"projection \[n_in, n_out\] = \[8, 8\]"):
        dense(grid=(3, 4))
    with pytest.raises(ValueError, match=r"\[n_in, n_out\] = \[8, 6\]"):
        dense(grid=(2, 4), n_out=6)
    with pytest.raises(ValueError, match=r"grid=\[2\]: expected two positive integers"):
        dense(grid=[2])
    with pytest.raises(ValueError, match=r"mode 'L' gates blocks along d_r only: expected "
                                         r"grid \(d_r, 1\)"):
        dense(mode="L", grid=(2, 2))
    with pytest.raises(ValueError, match=r"mode='LL': expected one of \('L2', 'LG', 'GL', 'L'\)"):
        dense(mode="LL")
    with pytest.raises(ValueError, match=r"conditioning='nm': expected one of"):
        dense(conditioning="nm")
    with pytest.raises(ValueError, match=r"placement='ffn3'"):
        dense(placement="ffn3")
    with pytest.raises(ValueError, match=r"heads=3: expected a divisor of the model width 8"):
        dense(conditioning="mhsa", heads=3)
    with pytest.raises(ValueError, match=r"gates=5: expected a positive divisor of the FFN "
                                         r"width 16"):
        OutputGate(gates=5, conditioning="task").build((None, None, 16), (None, None, 8))
    with pytest.raises(ValueError, match=r"materialise=True needs one grid per example"):
        grid_product(np.ones((1, 2, 8), "float32"), np.ones((8, 8), "float32"),
                     np.ones((1, 2, 2, 2), "float32"), materialise=True)
    layer = dense(conditioning="context")
    with pytest.raises(ValueError, match=r"needs conditioning\['context'\]"):
        layer(np.ones((1, 2, 8), "float32"), conditioning=task_cond(0))


# ------------------------------------------------------------------ the equations


@pytest.mark.parametrize("mode,grid", [("L2", (2, 4)), ("LG", (4, 2)), ("GL", (2, 2)),
                                       ("L", (4, 1))])
def test_zero_initialised_grid_gives_one_and_a_half_xw(mode, grid):
    """σ(0) = 1/2 in every block, plus the residual: Y = 1.5 XW + b."""
    layer = dense(grid=grid, mode=mode, initializer="zeros")
    layer.kernel.assign(RNG.normal(size=layer.kernel.shape).astype("float32"))
    layer.bias.assign(RNG.normal(size=layer.bias.shape).astype("float32"))
    x = RNG.normal(size=(3, 5, 8)).astype("float32")
    y = np_(layer(x, conditioning=task_cond(0, 1, 2)))
    expected = 1.5 * x @ np_(layer.kernel) + np_(layer.bias)
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("per_position", [False, True])
@pytest.mark.parametrize("residual", [True, False])
def test_efficient_product_equals_the_materialised_weight(per_position, residual):
    x = RNG.normal(size=(3, 4, 12)).astype("float32")
    kernel = RNG.normal(size=(12, 10)).astype("float32")
    shape = (3, 4, 3, 5) if per_position else (3, 3, 5)
    grid = RNG.uniform(size=shape).astype("float32")
    expected = materialised(x, kernel, grid, residual)
    np.testing.assert_allclose(np_(grid_product(x, kernel, grid, residual)), expected, atol=1e-4)
    if not per_position:
        np.testing.assert_allclose(np_(grid_product(x, kernel, grid, residual, materialise=True)),
                                   expected, atol=1e-4)


@pytest.mark.parametrize("mode", ["L2", "LG", "GL", "L"])
def test_layer_is_eqs_3_to_5_and_7(mode):
    """The whole layer: T′ = T (task conditioning), r and c per mode, σ(r cᵀ), blocks, + XW + b."""
    grid = (4, 1) if mode == "L" else (4, 2)
    layer = dense(grid=grid, mode=mode)
    randomise(layer, 0.7)
    x = RNG.normal(size=(2, 3, 8)).astype("float32")
    y = np_(layer(x, conditioning=task_cond(2, 0)))
    hg = layer.hypergrid
    t = np_(hg.conditioning.task_embedding)[[2, 0]]
    r = t @ np_(hg.rows) if mode != "GL" else np.broadcast_to(np_(hg.rows), (2, grid[0]))
    c = {"L2": lambda: t @ np_(hg.columns), "GL": lambda: t @ np_(hg.columns),
         "LG": lambda: np.broadcast_to(np_(hg.columns), (2, grid[1])),
         "L": lambda: np.ones((2, 1))}[mode]()
    g = sigmoid(r[:, :, None] * c[:, None, :])
    expected = materialised(x, np_(layer.kernel), g) + np_(layer.bias)
    np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)


FFN1 = "feedforward_intermediate_dense"


@pytest.mark.parametrize("orientation,name,n_in,n_out,block,transposed", [
    ("fan", FFN1, 16, 32, (4, 4), False),    # d_r = 4 splits the 16 inputs, d_c = 8 the 32 outputs
    ("fan", FFN2, 32, 16, (8, 2), False),
    ("eq3", FFN1, 16, 32, (2, 8), True),     # d_r = 4 splits the 32 outputs, d_c = 8 the 16 inputs
    ("eq3", FFN2, 32, 16, (4, 4), True),
])
def test_grid_orientation_sets_the_block_shape(orientation, name, n_in, n_out, block, transposed):
    """With W = 1 and no residual, row i of the layer's output on the identity is row i of
    ψ(Ĝ): the blocks of kron(Ĝ, 1) ("fan": d_r on the inputs, the text's fan-in) or of
    kron(Ĝᵀ, 1) ("eq3": d_r on the outputs, eq. 3's W ∈ R^{d_m×d_f} rows)."""
    layer = dense(grid=(4, 8), mode="L2", n_in=n_in, n_out=n_out, name=name,
                  orientation=orientation, residual=False)
    randomise(layer)
    layer.kernel.assign(np.ones((n_in, n_out), "float32"))
    layer.bias.assign(np.zeros(n_out, "float32"))
    cond = task_cond(1)
    g = np_(layer.hypergrid.grid(cond))[0]
    assert g.shape == (4, 8)
    weight = np_(layer(np.eye(n_in, dtype="float32")[None], conditioning=cond))[0]
    np.testing.assert_allclose(weight, np.kron(g.T if transposed else g, np.ones(block)),
                               rtol=1e-5)
    assert block_shape((4, 8), n_in, n_out, orientation) == block


def test_block_shapes_of_the_papers_grid_at_t5_base():
    """32 × 128 on FFN2 (3072 → 768): 96 × 6 blocks by fan-in/fan-out, 24 × 24 by eq. 3."""
    assert block_shape((32, 128), 3072, 768) == (96, 6)
    assert block_shape((32, 128), 3072, 768, "eq3") == (24, 24)
    with pytest.raises(ValueError, match=r"expected n_out % d_r == 0 and n_in % d_c == 0 "
                                         r"\(orientation 'eq3'\)"):
        dense(grid=(3, 4), orientation="eq3")
    with pytest.raises(ValueError, match=r"orientation='rows': expected one of \('fan', 'eq3'\)"):
        dense(orientation="rows")


def test_scalar_hypergrid_scales_the_whole_product_by_one_plus_the_mean_gate():
    layer = dense(grid=(2, 4), mode="L2", scalar=True)
    randomise(layer, 0.7)
    x = RNG.normal(size=(2, 3, 8)).astype("float32")
    cond = task_cond(1, 2)
    g = np_(layer.hypergrid.grid(cond))
    assert g.shape == (2, 1, 1)
    plain = x @ np_(layer.kernel)
    np.testing.assert_allclose(np_(layer(x, conditioning=cond)),
                               (1 + g) * plain + np_(layer.bias), rtol=1e-4, atol=1e-4)


def test_attention_projections_keep_their_head_layout():
    """Placement qkv: kernel [in, heads, head_dim], bias [heads, head_dim], as EinsumDense."""
    layer = HyperGridDense("abc,cde->abde", (None, 2, 4), "de", grid=(2, 2), mode="LG",
                           conditioning="task", num_tasks=2, name="query", initializer="zeros")
    layer.build((None, None, 8))
    plain = keras.layers.EinsumDense("abc,cde->abde", (None, 2, 4), bias_axes="de")
    plain.build((None, None, 8))
    randomise(plain)
    layer.kernel.assign(plain.kernel)
    layer.bias.assign(plain.bias)
    x = RNG.normal(size=(2, 3, 8)).astype("float32")
    bias = np_(plain.bias)
    np.testing.assert_allclose(np_(layer(x, conditioning=task_cond(0, 1))) - bias,
                               1.5 * (np_(plain(x)) - bias), rtol=1e-5, atol=1e-5)


def test_output_gate_is_eq_8():
    og = OutputGate(gates=4, conditioning="task", num_tasks=2)
    og.build((None, None, 8), (None, None, 6))
    randomise(og)
    h = RNG.normal(size=(2, 3, 8)).astype("float32")
    x = RNG.normal(size=(2, 3, 6)).astype("float32")
    y = np_(og(h, x, conditioning=task_cond(1, 0), activation=keras.activations.relu))
    gate = sigmoid(np_(og.conditioning.task_embedding)[[1, 0]] @ np_(og.kernel))
    expected = np.maximum(h, 0) * np.repeat(gate, 2, axis=-1)[:, None, :]
    np.testing.assert_allclose(y, expected, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------ conditioning


def mhsa_layer(**options):
    layer = dense(grid=(2, 4), mode="L2", conditioning="mhsa", heads=2, **options)
    randomise(layer, 0.5)
    return layer


def mhsa_cond(sequence, mask, tasks):
    return {"task_index": np.array(tasks, "int32"), "sequence": sequence,
            "sequence_mask": mask}


def test_mhsa_conditioning_is_the_first_output_of_attention_over_task_and_input():
    """T′ = MHSA([T; X])[0]: the task query attends to T and every unmasked position."""
    cond_layer = TaskConditioning("mhsa", num_tasks=2, heads=2)
    cond_layer.build(8)
    randomise(cond_layer)
    seq = RNG.normal(size=(2, 5, 8)).astype("float32")
    mask = np.ones((2, 1, 5), bool)
    mask[1, 0, 3:] = False  # example 2 is padded after 3 tokens
    t = np_(cond_layer.vector(mhsa_cond(seq, mask, [1, 0])))
    full = keras.layers.MultiHeadAttention(2, 4)
    task = np_(cond_layer.task_embedding)[[1, 0]][:, None].astype("float32")
    for b, length in ((0, 5), (1, 3)):
        joined = np.concatenate([task[b:b + 1], seq[b:b + 1, :length]], axis=1)
        if not full.built:
            full(joined, joined)
            for w, v in zip(full.weights, cond_layer.attention.weights):
                w.assign(v)
        np.testing.assert_allclose(t[b], np_(full(joined, joined))[0, 0], rtol=1e-4, atol=1e-5)


def test_example_two_does_not_change_example_one():
    layer = mhsa_layer()
    x = RNG.normal(size=(2, 4, 8)).astype("float32")
    seq = RNG.normal(size=(2, 4, 8)).astype("float32")
    mask = np.ones((2, 1, 4), bool)
    y = np_(layer(x, conditioning=mhsa_cond(seq, mask, [0, 1])))
    x2, seq2 = x.copy(), seq.copy()
    x2[1] += 3.0
    seq2[1] = RNG.normal(size=(4, 8))
    y2 = np_(layer(x2, conditioning=mhsa_cond(seq2, mask, [0, 2])))
    np.testing.assert_allclose(y2[0], y[0], atol=1e-6)
    assert np.abs(y2[1] - y[1]).max() > 1e-3


def test_padded_positions_do_not_change_the_grid():
    layer = mhsa_layer()
    seq = RNG.normal(size=(1, 5, 8)).astype("float32")
    mask = np.array([[[True, True, True, False, False]]])
    g = np_(layer.hypergrid.grid(mhsa_cond(seq, mask, [1])))
    seq[0, 3:] = RNG.normal(size=(2, 8))
    np.testing.assert_allclose(np_(layer.hypergrid.grid(mhsa_cond(seq, mask, [1]))), g, atol=1e-6)


def test_causal_mask_gives_each_position_a_grid_from_the_past_only():
    layer = mhsa_layer()
    x = RNG.normal(size=(1, 5, 8)).astype("float32")
    seq = RNG.normal(size=(1, 5, 8)).astype("float32")
    causal = np.tril(np.ones((5, 5), bool))[None]
    cond = mhsa_cond(seq, causal, [1])
    assert layer.hypergrid.grid(cond).shape == (1, 5, 2, 4)
    y = np_(layer(x, conditioning=cond))
    seq2 = seq.copy()
    seq2[0, 3:] = RNG.normal(size=(2, 8))  # later tokens change
    y2 = np_(layer(x, conditioning=mhsa_cond(seq2, causal, [1])))
    np.testing.assert_allclose(y2[0, :3], y[0, :3], atol=1e-6)
    assert np.abs(y2[0, 3:] - y[0, 3:]).max() > 1e-4
    # Position i's grid is the bidirectional grid of the prefix of length i + 1.
    prefix = np_(layer.hypergrid.grid(mhsa_cond(seq[:, :2], np.ones((1, 1, 2), bool), [1])))
    np.testing.assert_allclose(np_(layer.hypergrid.grid(cond))[:, 1], prefix, atol=1e-5)


def test_self_attention_source_takes_t_prime_from_the_host():
    """``"self_attention"``: T′ is the host's attention output at its task token, passed
    as ``conditioning["task_attention"]``; the hypernetwork holds no conditioning weights."""
    layer = dense(grid=(2, 4), mode="L2", conditioning="self_attention")
    randomise(layer, 0.7)
    t = RNG.normal(size=(2, 8)).astype("float32")
    g = np_(layer.hypergrid.grid({"task_attention": t}))
    hg = layer.hypergrid
    expected = sigmoid((t @ np_(hg.rows))[:, :, None] * (t @ np_(hg.columns))[:, None, :])
    np.testing.assert_allclose(g, expected, rtol=1e-5)
    assert not hg.conditioning.weights
    with pytest.raises(ValueError, match=r"needs conditioning\['task_attention'\]"):
        hg.grid(task_cond(0, 1))


@pytest.mark.parametrize("conditioning", ["task", "mhsa"])
def test_different_task_tokens_give_different_outputs(conditioning):
    layer = dense(grid=(2, 4), mode="LG", conditioning=conditioning, heads=2)
    x = np.repeat(RNG.normal(size=(1, 4, 8)).astype("float32"), 2, axis=0)
    cond = {"task_index": np.array([0, 1], "int32"), "sequence": x,
            "sequence_mask": np.ones((2, 1, 4), bool)}
    y = np_(layer(x, conditioning=cond))  # default initialisation: Glorot L, G = 1
    assert np.abs(y[0] - y[1]).max() > 1e-4
    cond["task_index"] = np.array([1, 1], "int32")
    y = np_(layer(x, conditioning=cond))
    np.testing.assert_allclose(y[0], y[1], atol=1e-6)


# ------------------------------------------------------------------ parameters


@pytest.mark.parametrize("mode", ["L2", "LG", "GL", "L"])
@pytest.mark.parametrize("conditioning", ["mhsa", "self_attention", "task", "context"])
def test_parameter_count_is_the_formula(mode, conditioning):
    """Per layer: the plain projection, the grid (LG d·d_r + d_c, GL d_r + d·d_c,
    L² d·(d_r + d_c), L d·d_r; d = the width of T′, the model width), plus the task
    embedding (tasks·d) and the conditioning MHSA (4 d² + 4 d); with the host's
    self-attention (which holds the task token), nothing more."""
    d_ff, d, tasks, heads = 24, 8, 5, 2
    d_r, d_c = (4, 1) if mode == "L" else (4, 2)
    layer = dense(grid=(d_r, d_c), mode=mode, conditioning=conditioning, n_in=d_ff, n_out=d,
                  num_tasks=tasks, heads=heads)
    grid = {"L2": d * d_r + d * d_c, "LG": d * d_r + d_c, "GL": d_r + d * d_c,
            "L": d * d_r}[mode]
    extra = {"mhsa": tasks * d + 4 * d * d + 4 * d, "task": tasks * d, "context": 0,
             "self_attention": 0}[conditioning]
    assert layer.count_params() == d_ff * d + d + grid + extra
    og = OutputGate(gates=6, conditioning=conditioning, num_tasks=tasks, heads=heads)
    og.build((None, None, d_ff), (None, None, d))
    assert og.count_params() == d * 6 + extra
    if conditioning == "mhsa":  # a light conditioning attention: heads·key_dim = 2·3
        light = dense(grid=(d_r, d_c), mode=mode, n_in=d_ff, n_out=d, num_tasks=tasks,
                      conditioning="mhsa", heads=2, key_dim=3)
        attention = 3 * (d * 6 + 6) + 6 * d + d
        assert light.count_params() == d_ff * d + d + grid + tasks * d + attention


# ------------------------------------------------------------------ the checkerboard toy

TOY_N = 4


class Toy(keras.Model):
    """One projection y = x W shared by two tasks: HyperGrid (L² or L, no residual),
    output gating, or plain sharing."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind
        if kind in ("L2", "L"):
            self.proj = HyperGridDense("abc,cd->abd", (None, TOY_N), None, mode=kind,
                                       grid=(2, 2) if kind == "L2" else (2, 1),
                                       conditioning="task", num_tasks=2, residual=False, name=FFN2)
        else:
            self.proj = keras.layers.EinsumDense("abc,cd->abd", (None, TOY_N))
        if kind == "og":
            self.gate = OutputGate(gates=TOY_N, conditioning="task", num_tasks=2)

    def build(self, input_shape=None):
        self.proj.build((None, None, TOY_N))
        if self.kind == "og":
            self.gate.build((None, None, TOY_N), (None, None, TOY_N))

    def call(self, inputs):
        x, cond = inputs["x"], {"task_index": ops.cast(inputs["task"], "int32")}
        if self.kind in ("L2", "L"):
            return self.proj(x, conditioning=cond)
        h = self.proj(x)
        return self.gate(h, x, conditioning=cond, activation=lambda v: v) if self.kind == "og" else h


def test_checkerboard_toy_hypergrid_fits_both_tasks_and_gates_cannot():
    """Task B is task A's map with the off-diagonal blocks of a 2×2 grid zeroed. σ(r cᵀ)
    reaches that checkerboard (r = c = k(1, −1)) and the uniform grid of task A
    (r = c = k(1, 1)); row gates, output gates and plain sharing cannot. (800 steps: from
    some initialisations the grid needs several hundred to leave σ's flat regions; all of
    seeds 0-7 reach < 1e-4 here.)"""
    rng = np.random.default_rng(0)
    w_a = rng.normal(size=(TOY_N, TOY_N)).astype("float32")
    checker = np.kron(np.eye(2), np.ones((2, 2))).astype("float32")
    n = 128
    x = rng.normal(size=(2 * n, 1, TOY_N)).astype("float32")
    task = np.repeat([0, 1], n).astype("int32")
    y = np.concatenate([x[:n] @ w_a, x[n:] @ (checker * w_a)])
    variance = float(np.mean(y ** 2))
    repeats = 200  # 800 Adam steps of 64 examples
    loss = {}
    for kind in ("L2", "L", "og", "shared"):
        keras.utils.set_random_seed(0)
        model = Toy(kind)
        model.build()
        model.compile(keras.optimizers.Adam(0.02), "mse", steps_per_execution=100)
        model.fit({"x": np.tile(x, (repeats, 1, 1)), "task": np.tile(task, repeats)},
                  np.tile(y, (repeats, 1, 1)), batch_size=64, epochs=1, verbose=0)
        loss[kind] = model.evaluate({"x": x, "task": task}, y, batch_size=2 * n,
                                    verbose=0) / variance
    assert loss["L2"] < 1e-4, loss
    assert min(loss["L"], loss["og"], loss["shared"]) > 0.03, loss
    assert loss["shared"] > loss["og"], loss  # the gates help, but cannot reach the map


# ------------------------------------------------------------------ in NeMoT

TINY = nemot.NeMoTConfig.preset("tiny").replace(
    max_text_length=8, max_position_embeddings=8, num_vanilla_layers=1, num_nm_layers=1,
    output_blocks=("lm", "gqa"))
NEMOT_SPECS = [
    {"kind": "hypergrid", "sets": ["vanilla"], "mode": "L2", "grid": [4, 8],
     "conditioning": "task"},
    {"kind": "hypergrid", "sets": ["output"], "mode": "LG", "grid": [8, 4],
     "conditioning": "context", "placement": "ffn1"},
    {"kind": "hypergrid_og", "sets": ["output"], "gates": 16, "conditioning": "context"},
]


def ids(tasks, texts=((5, 6, 7, 8), (9, 10, vocab.PAD_ID, vocab.PAD_ID))):
    return np.array([[vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id(t), *text]
                     for t, text in zip(tasks, texts)], "int32")


def test_nemot_hosts_hypergrid_trains_a_step_and_decodes_with_the_cache():
    keras.utils.set_random_seed(0)
    model = nemot.build_model(TINY.replace(modulation=NEMOT_SPECS))
    vanilla = model.backbone.vanilla_set.transformer_layers[0]
    out_layer = model.backbone.output_set.blocks["gqa"].transformer_layers[0]
    assert isinstance(vanilla.feedforward_output_dense, HyperGridDense)
    assert isinstance(out_layer.feedforward_intermediate_dense, HyperGridDense)
    assert isinstance(out_layer.activation_modulation, OutputGate)
    plain = nemot.build_model(TINY).backbone.vanilla_set.transformer_layers[0]
    assert vanilla.feedforward_output_dense.kernel.shape == plain.feedforward_output_dense.kernel.shape

    x = ids(["lm", "gqa"])
    targets = np.where(x[:, 4:] == vocab.PAD_ID, -1, x[:, 4:])
    targets = np.pad(targets, ((0, 0), (0, 1)), constant_values=-1).astype("int32")
    model.compile(keras.optimizers.Adam(1e-2), loss=NeMoTLoss(), run_eagerly=True)  # no tracing: 1 s
    grid_weights = [vanilla.feedforward_output_dense.hypergrid.rows,
                    out_layer.feedforward_intermediate_dense.hypergrid.rows]
    before = [np.array(w) for w in grid_weights]
    model.fit({"token_ids": x}, {"task_targets": targets, "lm_targets": targets}, epochs=1,
              batch_size=2, verbose=0)
    assert all(np.abs(np.array(w) - b).max() > 0 for w, b in zip(grid_weights, before))

    # Cached decoding, one token at a time, gives the uncached logits at every position.
    tokens = ids(["gqa"])[:, :7]
    full = np.asarray(model({"token_ids": tokens}, training=False)["logits"])[0]
    prompt_mask = np.arange(7)[None] == 3  # the first text position
    hidden, cache = model._build_cache(tokens, prompt_mask)
    np.testing.assert_allclose(np.asarray(model.head(hidden))[0, 0], full[0], atol=1e-5)
    for position in range(1, 4):
        step, _, cache = model.call_with_cache(tokens[:, 3 + position:4 + position], cache,
                                               position)
        np.testing.assert_allclose(np.asarray(step)[0, 0], full[position], atol=1e-5)


def test_nemot_refuses_the_mhsa_conditioning_it_cannot_serve_with_a_cache():
    spec = {"kind": "hypergrid", "sets": ["vanilla"], "conditioning": "mhsa"}
    with pytest.raises(ValueError, match=r"'hypergrid' in the vanilla set needs conditioning "
                                         r"\['sequence', 'sequence_mask'\]"):
        nemot.build_model(TINY.replace(modulation=[spec]))
    spec = {"kind": "hypergrid", "sets": ["vanilla"], "conditioning": "context"}
    with pytest.raises(ValueError, match=r"needs conditioning \['context'\]"):
        nemot.build_model(TINY.replace(modulation=[spec]))
    spec = {"kind": "hypergrid", "sets": ["vanilla"], "conditioning": "self_attention"}
    with pytest.raises(ValueError, match=r"needs conditioning \['task_attention'\]"):
        nemot.build_model(TINY.replace(modulation=[spec]))
