"""NeMoT layers: masks, attention, transformer layers, the three sets and the gate."""

from nemot.layers.attention import MultiHeadAttention
from nemot.layers.masks import attention_mask, mask_from_positions
from nemot.layers.sets import (
    Gate,
    NeuromodulatorySet,
    OutputBlock,
    OutputSet,
    VanillaSet,
)
from nemot.layers.transformer import TransformerLayer
