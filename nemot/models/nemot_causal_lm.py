"""NeMoT as a KerasHub causal LM: :class:`NeMoTBackbone` plus the main and vanilla heads
(thesis eq. 3.14), the combined loss (eq. 3.17), the routing rule of the output blocks in
training, and cached decoding (KerasHub's ``generate_step`` and ``call_with_cache``, shared with
the GPT-2 baseline in :mod:`nemot.models.task`; ``<dec>`` mode).

Routing rule: an output block that no example of a training batch selects keeps its
weights and its optimizer slots. Routing gives such a block a zero gradient, and Adam
still moves a variable whose gradient is zero (its momentum decays but
``m / (sqrt(v) + eps)`` keeps stepping); in the original code such a block got no update.
:meth:`NeMoTCausalLM.train_step` keeps them (:mod:`nemot.models.routing`).
"""

import contextlib

import keras
from keras import ops

from nemot import backend, vocab
from nemot.models.gpt2 import load_vanilla_set
from nemot.models.heads import vocabulary_head
from nemot.models.losses import VANILLA_TARGETS
from nemot.models.nemot_backbone import NeMoTBackbone
from nemot.models.routing import BATCH_TASKS, masked_train_step
from nemot.models.task import TextToTextCausalLM
from nemot.models.weights import count_weights, transfer_weights


@keras.saving.register_keras_serializable(package="nemot")
class NeMoTCausalLM(TextToTextCausalLM):
    """The NeMoT model for generation and training: backbone, heads, loss, ``generate``.

    Call it on ``{"token_ids": int [batch, 3 + n]}`` (auxiliary tokens first, text
    right-padded with ``<pad>``). Returns ``"logits"`` [batch, n, vocab] of the main head,
    ``"vanilla_logits"`` of the vanilla head when ``config.vanilla_head`` (in ``fit``'s
    train step, left to the loss: :meth:`call`) and, with
    ``return_gates=True``, ``"gates"`` [batch, 3 + n, d_model].

    Training: ``compile(optimizer)`` uses ``NeMoTLoss()`` (``L1 + 0.2 L2 + 0.5 L3``, eq.
    3.17); ``fit`` takes formatted strings (through the preprocessor) or token ids with
    ``{"task_targets", "lm_targets"}``. An output block no example of a batch selects is
    not updated, its optimizer slots included.

    Args:
        backbone: a :class:`NeMoTBackbone`.
        preprocessor: a :class:`NeMoTPreprocessor`, or None (token ids in and out).

    Example:
        >>> lm = nemot.NeMoTCausalLM.from_preset("tiny", load_weights=False)
        >>> lm.generate("<q> Is the sky blue? <sep>", max_new_tokens=4, strip_prompt=True)
        >>> lm.compile(keras.optimizers.Adam(1e-4)); lm.fit(["<q> Sky? <sep> blue </s>"])
    """

    backbone_cls = NeMoTBackbone

    def make_heads(self):
        dtype = self.backbone.dtype_policy
        self.head = vocabulary_head(self.config, "head", dtype)
        self.vanilla_head = None
        if self.config.vanilla_head:
            self.vanilla_head = vocabulary_head(self.config, "vanilla_head", dtype)

    def heads(self, backbone_outputs, vanilla=True):
        """The main head on the output set (and the vanilla head on the vanilla set's
        output, when the config has one and ``vanilla``), eq. 3.14."""
        outputs = {"logits": self.head(backbone_outputs["hidden_states"])}
        if self.vanilla_head is not None and vanilla:
            outputs["vanilla_logits"] = self.vanilla_head(
                backbone_outputs["vanilla_hidden_states"])
        return outputs

    def on_compile_loss(self, loss):
        # A head no active term reads gets no gradient: freeze it rather than let the
        # optimizer warn about it at every step (pre-training is L1 only).
        if self.vanilla_head is not None:
            self.vanilla_head.trainable = bool(loss.vanilla_weight)

    # Set while the model's own train step runs: its loss applies the vanilla head.
    _vanilla_head_in_loss = False

    # Override: the vanilla head skipped or left to the loss in training; gates on request.
    def call(self, inputs, training=None, return_gates=False):
        """The graph of ``__init__``, and the gates when asked for. In training, the
        vanilla head is skipped when the compiled loss does not read it; inside ``fit``'s
        train step, where the loss reads it, it is left to the loss:
        ``"vanilla_hidden_states"`` [batch, n, d_model] instead of its logits
        (:meth:`loss_inputs`)."""
        out = self.backbone(inputs, training=training)
        needed = not training or self.needs_output("vanilla")
        to_loss = bool(training) and needed and self._vanilla_head_in_loss
        outputs = self.heads(out, vanilla=needed and not to_loss)
        if to_loss and self.vanilla_head is not None:
            outputs["vanilla_hidden_states"] = out["vanilla_hidden_states"]
        if return_gates:
            outputs["gates"] = out["gates"]
        return outputs

    def loss_inputs(self, y, y_pred):
        """The vanilla head (L3) applied where the loss reads it: the positions of the task
        targets, which are few (an answer and ``</s>``, or one option token), where shapes
        may depend on the data (TensorFlow outside XLA); every position under XLA and JAX.

        The loss and its gradients are the same either way; the term's forward and backward
        pass 8.9x faster on a CPU for answers of 5 tokens after prompts of 123
        (``python -m bench speed``).
        """
        if "vanilla_hidden_states" not in y_pred:
            return y, y_pred
        y_pred = dict(y_pred)
        hidden = y_pred.pop("vanilla_hidden_states")
        if not backend.dynamic_shapes():
            return y, {**y_pred, "vanilla_logits": self.vanilla_head(hidden)}
        import tensorflow as tf

        targets = tf.cast(y["task_targets"], tf.int32)
        counted = tf.not_equal(targets, vocab.IGNORE_ID)
        rows = tf.boolean_mask(hidden, counted)[None]            # [1, targets, d_model]
        return ({**y, VANILLA_TARGETS: tf.boolean_mask(targets, counted)[None]},
                {**y_pred, "vanilla_logits": self.vanilla_head(rows)})

    # Override: the routing rule (a block no example selects keeps weights and slots).
    def train_step(self, *args):
        """Keras's train step (``(data)``, or ``(state, data)`` on JAX) with the routing
        rule: the blocks no example of the (global) batch selects keep weights and slots."""
        x, y, _ = keras.utils.unpack_x_y_sample_weight(args[-1])
        self.backbone.inputs_layer.check_rank(x["token_ids"].shape)
        tasks = ops.cast(x["token_ids"], "int32")[:, vocab.TASK_POSITION]
        if isinstance(y, dict) and BATCH_TASKS in y:
            # Gradient accumulation: the blocks of every micro-batch of the update.
            tasks = ops.concatenate([tasks, ops.reshape(ops.cast(y[BATCH_TASKS], "int32"),
                                                        [-1])])
        selected = ops.any(self.backbone.output_set.selection(tasks), axis=0)
        blocks = [block.trainable_variables
                  for block in self.backbone.output_set.blocks.values()]
        with self.vanilla_head_in_loss():
            return masked_train_step(self, super().train_step, args, selected, blocks)

    @contextlib.contextmanager
    def vanilla_head_in_loss(self):
        """Within it, a training call leaves the vanilla head to :meth:`loss_inputs` (as
        the train step does), so ``compute_loss`` applies it where the loss reads it."""
        object.__setattr__(self, "_vanilla_head_in_loss", True)
        try:
            yield
        finally:
            object.__setattr__(self, "_vanilla_head_in_loss", False)

    def parameter_breakdown(self):
        """Parameters per component; ``total`` is their sum (every weight counted once).

        Keys: ``vanilla_set``, ``aux_embedding``, ``neuromodulatory_set``,
        ``output_set`` (all blocks), ``head``, ``vanilla_head``, ``reading_strategies``
        (0 without them), ``total``, and ``output_blocks`` with each named block's count.
        """
        parts = self.backbone.parameter_breakdown()
        blocks = parts.pop("output_blocks")
        parts["head"] = count_weights(self.head)
        parts["vanilla_head"] = count_weights(self.vanilla_head) if self.vanilla_head else 0
        parts["total"] = sum(parts.values())
        parts["output_blocks"] = blocks
        return parts


def build_model(config, gpt2=None, preprocessor="default"):
    """Build a :class:`NeMoTCausalLM` whose weights exist.

    Args:
        config: a ``NeMoTConfig``.
        gpt2: optional GPT-2 weights for the vanilla set: a KerasHub preset
            name or directory, or a Hugging Face GPT-2 checkpoint directory.
        preprocessor: a :class:`NeMoTPreprocessor`, None, or ``"default"`` (GPT-2's
            tokenizer files, the config's text length).
    """
    model = NeMoTCausalLM.from_config_object(config, preprocessor=preprocessor)
    if gpt2 is not None:
        load_vanilla_set(model, gpt2)
    return model


def load_weights_partial(model, path):
    """Start a NeMoT with reading strategies from a checkpoint of the same model without them.

    Thesis s.3.5.5: NeMoT_aoi and NeMoT_high start from NeMoT_general's weights;
    the reading-strategy weights keep their Glorot-uniform start. A checkpoint
    that already has the strategies loads with ``model.load_weights``.

    Args:
        model: a built NeMoT (any ``reading_strategies``).
        path: a ``.keras`` or ``.weights.h5`` file saved from a NeMoT whose
            config is ``model.config`` without reading strategies.

    Returns:
        The paths of the weights left at their initial values.

    Example:
        >>> model = build_model(cfg.replace(reading_strategies=("aoi",)))
        >>> load_weights_partial(model, "checkpoints/general/model_last.keras")
        ['nemot_backbone/reading_strategies/aoi/w1/kernel', ...]
    """
    path = str(path)
    if not path.endswith((".keras", ".weights.h5")):
        raise ValueError(f"{path}: expected a .keras or .weights.h5 checkpoint")
    source = build_model(model.config.replace(reading_strategies=()), preprocessor=None)
    try:
        source.load_weights(path)
    except (ValueError, KeyError) as error:
        raise ValueError(f"{path}: not a checkpoint of this NeMoT without reading strategies "
                         f"(config {model.config.replace(reading_strategies=())}): "
                         f"{error}") from error
    _, fresh, unplaced = transfer_weights(source, model)
    if unplaced:
        raise ValueError(f"{path}: weights {unplaced[:5]} have no place in the model")
    return fresh


def parameter_breakdown(model):
    """Parameters per component of ``model`` (NeMoT or the GPT-2 baseline); see their
    ``parameter_breakdown`` methods."""
    return model.parameter_breakdown()
