"""NeMoT layers: masks, attention, transformer layers, the three sets and the vocabulary
heads (the gate between the sets is :class:`nemot.modulation.Gate`, re-exported here)."""

from nemot.layers.attention import MultiHeadAttention
from nemot.layers.heads import VocabularyHead
from nemot.layers.masks import attention_mask, mask_from_positions
from nemot.layers.sets import NeuromodulatorySet, OutputBlock, OutputSet, VanillaSet
from nemot.layers.transformer import TransformerLayer
from nemot.modulation.gate import Gate
