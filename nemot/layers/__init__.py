"""NeMoT layers: masks, attention, transformer layers and the three sets (the gate between
the sets is :class:`nemot.modulation.Gate`, re-exported here; the vocabulary heads are the
task's, :mod:`nemot.models.heads`)."""

from nemot.layers.attention import MultiHeadAttention
from nemot.layers.masks import attention_mask, mask_from_positions
from nemot.layers.sets import NeuromodulatorySet, OutputBlock, OutputSet, VanillaSet
from nemot.layers.transformer import TransformerLayer
from nemot.modulation.gate import Gate
