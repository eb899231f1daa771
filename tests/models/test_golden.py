"""A golden output of the tiny preset's forward pass, as KerasHub's backbone tests keep one:
fixed weights from a seed, a batch mixing modes, tasks and padding, and a few stored
logits. A silent change of the forward pass (a mask, the gate, the routing, a layer norm,
an activation) changes them; a refactor that keeps the function does not.

The weights do not come from Keras's initializers (which draw differently per backend
and per creation order): each trainable weight is drawn by NumPy from a seed and its
path below NeMoT's top-level part (``vanilla_set/transformer_layer_0/...``), so the
same values reach the same weight on TensorFlow and JAX, whatever the model class
around the parts is called. The JAX worker (tests/jax_worker.py) checks the same logits.
"""

import zlib

import numpy as np

# NeMoT's parts, as they name the paths of their weights.
PARTS = ("vanilla_set", "aux_embedding", "neuromodulatory_set", "gate", "output_set",
         "reading_strategies", "head", "vanilla_head")
POSITIONS = (0, 4, 6)
TOKEN_IDS = (0, 464, 50256, 50312)
# logits[example, POSITIONS][:, TOKEN_IDS] of the inputs below, float32.
GOLDEN = np.array([
    [[-0.189301, 0.031127, 0.806967, -0.899213],
     [-0.273532, 0.151252, 0.772952, -0.964719],
     [0.142436, -0.176745, 0.549058, -0.682226]],
    [[0.239556, 0.279327, 1.104440, -0.637598],
     [0.282058, -0.224998, 1.189227, -0.830154],
     [0.356727, 0.349925, 1.497411, -0.881246]],
])


def fixed_weights(model, seed=0):
    """Give every trainable weight of ``model`` values drawn from ``seed`` and its path."""
    for variable in model.trainable_weights:
        parts = variable.path.split("/")
        start = next((i for i, part in enumerate(parts) if part in PARTS), None)
        assert start is not None, f"{variable.path}: in none of NeMoT's parts {PARTS}"
        rng = np.random.default_rng([seed, zlib.crc32("/".join(parts[start:]).encode())])
        values = rng.normal(0.0, 0.1, tuple(variable.shape))
        if parts[-1] == "gamma":
            values += 1.0
        variable.assign(values.astype("float32"))


def inputs():
    """Two examples: ``<dec>`` ``<lm>`` with 10 text tokens, ``<enc>`` ``<gqa>`` with 7;
    the rest padding."""
    from nemot import vocab

    ids = np.full((2, 3 + 14), vocab.PAD_ID, "int32")
    ids[0, :3] = [vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")]
    ids[1, :3] = [vocab.CLS_ID, vocab.ENC_ID, vocab.task_token_id("gqa")]
    ids[0, 3:13] = [464, 3290, 318, 257, 1332, 286, 262, 6178, 2746, 13]
    ids[1, 3:10] = [2061, 318, 262, 3139, 286, 4881, 30]
    return ids


def golden_logits(call=None):
    """The stored slice of the tiny preset's logits with :func:`fixed_weights`;
    ``call(model, inputs)`` runs the forward pass (default: the model called eagerly)."""
    import nemot

    model = nemot.build_model(nemot.NeMoTConfig.preset("tiny"))
    fixed_weights(model)
    x = {"token_ids": inputs()}
    logits = np.asarray((call or (lambda m, x: m(x)))(model, x)["logits"])
    return logits[:, list(POSITIONS)][:, :, list(TOKEN_IDS)]


def test_tiny_forward_pass_gives_the_stored_logits(undrawn_weights):
    """(``undrawn_weights``: Keras's initializers give zeros; every trainable weight is
    overwritten.)"""
    np.testing.assert_allclose(golden_logits(), GOLDEN, atol=5e-5)
