"""NeMoT layers: masks, attention, transformer layers and the three sets (the gate
between them is :class:`nemot.modulation.Gate`, re-exported here)."""

from nemot.layers.attention import MultiHeadAttention
from nemot.layers.masks import attention_mask, mask_from_positions
from nemot.layers.sets import NeuromodulatorySet, OutputBlock, OutputSet, VanillaSet
from nemot.layers.transformer import TransformerLayer
from nemot.modulation.gate import Gate
