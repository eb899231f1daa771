"""NeMoT model configuration: a frozen dataclass with named presets (docs/spec.md section 2)."""

import dataclasses
import json
import tomllib
from pathlib import Path

from nemot import files, ranges, vocab
from nemot.errors import ConfigError
from nemot.modulation.spec import ModulationSpec
from nemot.ranges import Count, DropoutRate, NonNegativeFloat, PositiveFloat

THESIS_OUTPUT_BLOCKS = (
    "lm", "mqa", "gqa", "highlighting_rs", "summarize_rs", "paraphrase_rs",
)
# Reading strategies of thesis s.3.4.3 (nemot.layers.reading_strategies).
STRATEGIES = frozenset(("aoi", "highlighting"))
# nemot.layers.attention.MultiHeadAttention's two paths.
ATTENTION_IMPLEMENTATIONS = ("auto", "fused", "unfused")
# The stacks of NeMoT that host per-layer modulations (nemot.modulation).
MODULATION_SETS = ("vanilla", "neuromodulatory", "output")


@dataclasses.dataclass(frozen=True)
class NeMoTConfig:
    """Every size and switch of the NeMoT architecture.

    Names follow the thesis: Y vanilla-set layers, M neuromodulatory-set
    layers, A parallel output blocks of Z layers each.

    Args:
        vocab_size: the token ids the model reads and scores: rows of the embeddings,
            width of the logits (50,313, docs/spec.md §1).
        vocab_padding: the heads' kernels get zero columns up to a multiple of this
            (:attr:`padded_vocab_size`; 1, the default: none). The heads still
            return ``vocab_size`` logits, so no output changes; under XLA on a GPU
            the head GEMMs get a width cuBLAS takes (64 is the setting there,
            docs/performance.md). Weights of either width load into the other.
        max_text_length: text positions n (768 in the thesis; input is 3 + n).
        max_position_embeddings: rows of the learned position table (GPT-2: 1024).
        d_model, num_heads, d_ff: layer width, heads and feed-forward width.
        dropout: dropout rate on embeddings, sub-layer outputs and the NM output.
        vanilla_attention_dropout: dropout on the vanilla set's attention
            probabilities: GPT-2's 0.1 (``attn_pdrop``; the original code's
            ``TFGPT2Model`` applied it in training).
        attention_dropout: dropout on the attention probabilities of the NM and
            output sets (0: the original code's own layers had none, docs/spec.md §2.7).
        layer_norm_epsilon: epsilon of every LayerNorm.
        num_vanilla_layers: Y, pre-LN GPT-2 layers.
        num_nm_layers: M, pre-LN neuromodulatory layers.
        num_output_layers: Z, post-LN layers per output block.
        output_blocks: names of the parallel output blocks; block ``x`` is
            selected by the task token ``<x>``.
        num_output_blocks: how many of ``output_blocks`` to build (the first
            ones); ``replace(num_output_blocks=k)`` keeps the first k names.
        position_encoding: ``"learned"`` (GPT-2 ``wpe``) or ``"sinusoidal"`` (eq. 3.1).
        aux_embedding: ``"separate"`` table (original code) or ``"shared"`` with
            the word embedding.
        vanilla_head: build the vanilla-set auxiliary head (loss L3).
        nm_dropout_before_sigmoid: dropout on the NM output before the sigmoid
            (original code; docs/spec.md §9).
        exact_gelu: erf GELU in the NM and output sets (original code); the
            vanilla set always uses GPT-2's tanh approximation.
        kernel_l2: L2 regulariser on every Dense kernel (thesis text says 0.01;
            the original code never added it, so 0 by default).
        compat_values_use_key_weights: original-code bug: values projected with
            the key weights (no W_V).
        compat_route_by_first_example: original-code behaviour: the whole batch
            uses the output block of its first example.
        reading_strategies: reading strategies (thesis s.3.4.3): ``()``,
            ``("aoi",)``, ``("highlighting",)`` or both; highlighting needs the
            input ``"pos_tags"`` (``nemot.data.pos_tags``).
        reading_strategy_position: ``"vanilla_output"`` (thesis) or
            ``"embeddings"`` (right after the embeddings, the thesis' expectation).
        compat_aoi_bias: original code: biases on the AOI projections W1..W4.
        compat_tag_words_alone: original code: POS-tag every word alone instead
            of in context (read by the data pipeline, not by the model).
        attention_implementation: ``"fused"`` (``keras.ops.dot_product_attention``: cuDNN
            flash attention on JAX with a GPU; equal to ``"unfused"`` to 1e-5 in float32),
            ``"unfused"`` (scores in float32, the earlier path) or ``"auto"`` (fused where
            the device has a fused kernel, :func:`nemot.backend.has_fused_attention`).
            Attention with probability dropout in training (the vanilla set's 0.1) is
            always unfused.
        remat_layers: recompute each transformer layer's forward pass in the backward
            pass instead of keeping its activations (``jax.checkpoint``; JAX only: a
            TensorFlow model refuses it, as ``tf.recompute_grad`` fails inside the output
            set's branches under XLA): about one more forward pass per step; outputs and
            gradients unchanged (dropout included). Not in the thesis.
        scan_layers: on JAX, run the vanilla and neuromodulatory sets and each output
            block in training and scoring (not cached decoding) as one ``ops.scan`` over
            their layers' stacked weights, as the output set runs its blocks: XLA compiles
            one layer of each set instead of each layer (the thesis-size step's compile
            a quarter shorter on JAX's CPU, its step a tenth slower there: the weights are
            stacked in every step; docs/performance.md). Weights stay per layer
            (checkpoints, presets and GPT-2 interop unchanged); outputs and gradients equal
            the unrolled layers' to round-off. Off until a GPU measures its step.
            TensorFlow ignores it.
        modulation: per-layer modulations (:class:`nemot.modulation.ModulationSpec`,
            or their dicts) hosted by the vanilla, neuromodulatory or output set:
            PALs, HyperGrid, modulated activations (none in the thesis).
    """

    vocab_size: Count = vocab.VOCAB_SIZE
    vocab_padding: Count = 1
    max_text_length: Count = 768
    max_position_embeddings: Count = 1024
    d_model: Count = 768
    num_heads: Count = 12
    d_ff: Count = 3072
    dropout: DropoutRate = 0.1
    vanilla_attention_dropout: DropoutRate = 0.1
    attention_dropout: DropoutRate = 0.0
    layer_norm_epsilon: PositiveFloat = 1e-5
    num_vanilla_layers: Count = 12
    num_nm_layers: Count = 12
    num_output_layers: Count = 3
    output_blocks: tuple = THESIS_OUTPUT_BLOCKS
    num_output_blocks: Count | None = None
    position_encoding: str = "learned"
    aux_embedding: str = "separate"
    vanilla_head: bool = True
    nm_dropout_before_sigmoid: bool = True
    exact_gelu: bool = True
    kernel_l2: NonNegativeFloat = 0.0
    compat_values_use_key_weights: bool = False
    compat_route_by_first_example: bool = False
    reading_strategies: tuple = ()
    reading_strategy_position: str = "vanilla_output"
    compat_aoi_bias: bool = False
    compat_tag_words_alone: bool = False
    attention_implementation: str = "auto"
    remat_layers: bool = False
    scan_layers: bool = False
    modulation: tuple = ()

    def __post_init__(self):
        ranges.check(self)
        blocks = tuple(self.output_blocks)
        count = len(blocks) if self.num_output_blocks is None else int(self.num_output_blocks)
        if count < len(blocks):
            blocks = blocks[:count]
        extra = [name for name in THESIS_OUTPUT_BLOCKS if name not in blocks]
        while len(blocks) < count and extra:
            blocks += (extra.pop(0),)
        if count < 1 or len(blocks) != count:
            raise ValueError(
                f"num_output_blocks={count}: expected 1..{len(blocks)} named blocks, "
                f"got output_blocks={blocks}"
            )
        if len(set(blocks)) != len(blocks):
            raise ValueError(f"output_blocks has duplicate names: {blocks}")
        for name in blocks:
            vocab.task_token_id(name)
        object.__setattr__(self, "output_blocks", blocks)
        object.__setattr__(self, "num_output_blocks", count)
        _check_choice("position_encoding", self.position_encoding, ("learned", "sinusoidal"))
        _check_choice("aux_embedding", self.aux_embedding, ("separate", "shared"))
        strategies = tuple(self.reading_strategies)
        if len(set(strategies)) != len(strategies) or not set(strategies) <= STRATEGIES:
            raise ValueError(f"reading_strategies={strategies}: expected distinct names "
                             f"among {sorted(STRATEGIES)}")
        object.__setattr__(self, "reading_strategies", strategies)
        _check_choice("reading_strategy_position", self.reading_strategy_position,
                      ("vanilla_output", "embeddings"))
        _check_choice("attention_implementation", self.attention_implementation,
                      ATTENTION_IMPLEMENTATIONS)
        modulation = tuple(ModulationSpec.from_dict(m, "modulation") for m in self.modulation)
        for spec in modulation:
            unknown = sorted(set(spec.sets) - set(MODULATION_SETS))
            if unknown:
                raise ValueError(f"modulation {spec.kind!r}: sets {unknown}: expected some of "
                                 f"{MODULATION_SETS}")
        object.__setattr__(self, "modulation", modulation)
        if self.d_model % self.num_heads:
            raise ValueError(
                f"d_model={self.d_model} is not divisible by num_heads={self.num_heads}"
            )
        if self.max_text_length > self.max_position_embeddings:
            raise ValueError(
                f"max_text_length={self.max_text_length} exceeds "
                f"max_position_embeddings={self.max_position_embeddings}"
            )

    @property
    def padded_vocab_size(self):
        """Columns of the heads' kernels: ``vocab_size`` rounded up to a multiple of
        ``vocab_padding`` (50,313 -> 50,368 at 64)."""
        return -(-self.vocab_size // self.vocab_padding) * self.vocab_padding

    @property
    def num_aux_tokens(self):
        """Auxiliary tokens before the text: ``[<cls>, <mode>, <task>]`` (nemot.vocab)."""
        return vocab.NUM_AUX

    @property
    def sequence_length(self):
        """Model input length: auxiliary tokens + text (771 in the thesis)."""
        return self.num_aux_tokens + self.max_text_length

    @property
    def task_token_ids(self):
        """Task-token id of each output block, in block order."""
        return tuple(vocab.task_token_id(name) for name in self.output_blocks)

    def replace(self, **changes):
        """A new config with ``changes``; unknown fields raise ``TypeError``."""
        known = {f.name for f in dataclasses.fields(self)}
        unknown = sorted(set(changes) - known)
        if unknown:
            raise TypeError(f"unknown NeMoTConfig field(s): {', '.join(unknown)}")
        if "num_output_blocks" in changes and "output_blocks" not in changes:
            changes["output_blocks"] = self.output_blocks
        elif "output_blocks" in changes and "num_output_blocks" not in changes:
            changes["num_output_blocks"] = None
        return dataclasses.replace(self, **changes)

    def to_dict(self):
        data = dataclasses.asdict(self)
        data["output_blocks"] = list(self.output_blocks)
        data["reading_strategies"] = list(self.reading_strategies)
        data["modulation"] = [spec.to_dict() for spec in self.modulation]
        return data

    @classmethod
    def check_fields(cls, data, source="config"):
        """Raise ``ValueError`` naming ``source`` for keys that are not fields."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"{source}: unknown model field(s): {', '.join(unknown)}; "
                             f"expected some of {sorted(known)}")

    @classmethod
    def from_dict(cls, data, source="config"):
        cls.check_fields(data, source)
        data = dict(data)
        if "output_blocks" in data:
            data["output_blocks"] = tuple(data["output_blocks"])
        return cls(**data)

    @classmethod
    def preset(cls, name):
        """A named preset: ``thesis``, ``small`` or ``tiny``."""
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; expected one of {sorted(PRESETS)}")
        return cls(**PRESETS[name])

    @classmethod
    def from_file(cls, path):
        """Read the ``[model]`` table of a TOML run config (or a JSON dict).

        A ``preset`` key starts from that preset; the other keys override it. Anything
        wrong in the file is a :class:`~nemot.errors.ConfigError` naming it.
        """
        path = Path(path)
        text = files.read_text(path, ConfigError)
        try:
            data = json.loads(text) if path.suffix == ".json" else tomllib.loads(text)
        except (ValueError, RecursionError) as error:  # TOMLDecodeError is a ValueError
            kind = "JSON" if path.suffix == ".json" else "TOML"
            raise ConfigError(f"{path}: not valid {kind}: {error}") from None
        data = data.get("model", data) if isinstance(data, dict) else data
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a [model] table of model fields, got "
                              f"{type(data).__name__}")
        data = dict(data)
        try:
            base = cls.preset(data.pop("preset")) if "preset" in data else cls()
            cls.check_fields(data, source=str(path))
            return base.replace(**{k: (tuple(v) if k == "output_blocks" else v)
                                   for k, v in data.items()})
        except (ValueError, TypeError) as error:
            if isinstance(error, ConfigError):
                raise
            message = str(error)
            raise ConfigError(message if message.startswith(str(path)) else
                              f"{path}: {message}") from None


def as_config(config):
    """``config`` as a :class:`NeMoTConfig`: the dict a layer or model was saved with is
    read back (:meth:`NeMoTConfig.from_dict`); a config is returned as it is."""
    return NeMoTConfig.from_dict(config) if isinstance(config, dict) else config


def _check_choice(field, value, choices):
    if value not in choices:
        raise ValueError(f"{field}={value!r}: expected one of {choices}")


PRESETS = {
    "thesis": {},
    "small": dict(
        max_text_length=256, max_position_embeddings=256, d_model=256, num_heads=4,
        d_ff=1024, num_vanilla_layers=4, num_nm_layers=4, num_output_layers=2,
    ),
    "tiny": dict(
        max_text_length=32, max_position_embeddings=64, d_model=32, num_heads=2,
        d_ff=64, num_vanilla_layers=2, num_nm_layers=2, num_output_layers=1,
        output_blocks=("lm", "mqa", "gqa"),
    ),
}
