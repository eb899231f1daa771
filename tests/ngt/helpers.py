"""Helpers for the NGT tests: a tiny BERT and its inputs (SuperGLUE records and a tiny
vocabulary: tests/data/superglue_records.py)."""

import keras_hub
import numpy as np

TINY_BERT = dict(num_layers=4, num_heads=2, hidden_dim=16, intermediate_dim=32, max_sequence_length=64)


def tiny_backbone(vocabulary_size=200, **overrides):
    return keras_hub.models.BertBackbone(vocabulary_size=vocabulary_size, **(TINY_BERT | overrides))


def random_inputs(batch=2, length=10, vocabulary_size=200, seed=0, pad=3):
    """BERT inputs with the last ``pad`` positions of row 1 padded."""
    rng = np.random.default_rng(seed)
    mask = np.ones((batch, length), "int32")
    mask[1, length - pad :] = 0
    segments = np.zeros((batch, length), "int32")
    segments[:, length // 2 :] = 1
    return {
        "token_ids": rng.integers(5, vocabulary_size, (batch, length)).astype("int32") * mask,
        "segment_ids": segments * mask,
        "padding_mask": mask,
    }
