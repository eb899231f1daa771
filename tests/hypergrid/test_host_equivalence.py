"""HyperGrid on T5 through the modulation host equals the hand-wired T5 forward pass it
replaced (``nemot/hypergrid/model.py`` before HyperGrid moved onto the modulation extension point), on the same weights.

``data/t5_host_reference.npz`` holds that forward pass's logits (written by it at commit
ed6bada, against which this test first ran live) for each case, on the
deterministic weights below (a tiny T5 v1.0 and a gated, untied v1.1 with a head size
other than d / heads; every grid, gate and task token filled from its own seed).
"""

import zlib
from pathlib import Path

import numpy as np
import pytest

from nemot.hypergrid.model import HyperGridT5
from tests.hypergrid.helpers import t5_inputs, tiny_backbone

REFERENCE = Path(__file__).parent / "data" / "t5_host_reference.npz"

CASES = {
    "l2_all": {"mode": "L2", "grid": [4, 4], "placement": "all"},
    "gl_ffn_eq3_mhsa": {"mode": "GL", "grid": [4, 8], "placement": "ffn", "orientation": "eq3",
                        "conditioning": "mhsa", "heads": 2, "residual": False},
    "l_qkv_scalar_materialise": {"mode": "L", "grid": [4, 1], "placement": "qkv",
                                 "scalar": True, "materialise": True, "conditioning": "task"},
    "og_self_attention": {"mode": "OG", "gates": 4},
}
# T5 v1.1 (gated FFN, untied head, head size 4 != d / heads): HyperGrid on W_o.
GATED_CASES = {"lg_ffn2": {"mode": "LG", "grid": [4, 8]}}


def fill(layer, key, scale=0.5):
    """Every weight of ``layer`` N(0, scale) from the seed of ``key``, in weight order."""
    rng = np.random.default_rng(zlib.crc32(key.encode()))
    for w in layer.weights:
        w.assign(rng.normal(0, scale, w.shape).astype("float32"))


def backbone_weights(backbone):
    """Deterministic T5 weights: kernels and embeddings N(0, 0.3), norms 1 + N(0, 0.1)."""
    rng = np.random.default_rng(0)
    for w in backbone.weights:
        value = rng.normal(0, 0.3, w.shape)
        if len(w.shape) == 1:  # the RMS norms' scales
            value = 1.0 + value / 3
        w.assign(value.astype("float32"))


def backbone(gated):
    bb = tiny_backbone(use_gated_activation=True, tie_embedding_weights=False,
                       key_value_dim=4) if gated else tiny_backbone()
    backbone_weights(bb)
    return bb


def fill_model(model):
    """Every grid, output gate and task token, each from the seed of its place."""
    for stack in ("encoder", "decoder"):
        for i, layer in enumerate(getattr(model, f"{stack}_layers")):
            for role, dense in layer.dense.items():
                fill(dense.hypergrid, f"{stack}/{i}/{role}")
            if layer.activation_modulation is not None:
                fill(layer.activation_modulation, f"{stack}/{i}/og")
            if layer.task_token is not None:
                fill(layer.task_token, f"{stack}/{i}/task_token")


@pytest.mark.parametrize("gated", [False, True], ids=["v1_0", "v1_1"])
def test_hypergrid_through_the_host_equals_the_hand_wired_t5(gated):
    reference = np.load(REFERENCE)
    bb = backbone(gated)
    for case, options in (GATED_CASES if gated else CASES).items():
        model = HyperGridT5(bb, 3, options)
        fill_model(model)
        got = np.asarray(model(t5_inputs(tasks=(2, 1))))
        expected = reference[f"{'gated_' if gated else ''}{case}"]
        # The reference was written where TensorFlow's oneDNN operations were off; where
        # they are on (its default on CPUs with AVX512_VNNI, AVX512_BF16, AMX, ...) their
        # kernels round differently: up to 5.2e-6 measured (logits of size ~1; a wiring
        # mistake moves them by tenths).
        np.testing.assert_allclose(got, expected, atol=2e-5, err_msg=case)
