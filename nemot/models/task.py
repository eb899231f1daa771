"""What nemot's causal LMs (NeMoT, the GPT-2 baseline) share as KerasHub ``CausalLM`` tasks:
the combined loss with one metric per active term, ``generate`` on strings, KerasHub's
preset directories, and the checks of their token ids.

A task holds a backbone (its ``config`` is the backbone's), heads, and a
:class:`nemot.models.nemot_preprocessor.NeMoTPreprocessor` (or none: then it takes token
ids). ``fit`` is KerasHub's: raw formatted examples go through the preprocessor, token-id
inputs (``{"token_ids"}`` with ``{"task_targets", "lm_targets"}``) are checked and pass
as they are.
"""

import contextlib
import json
import os

import keras
import numpy as np
from keras import ops
from keras_hub.models import CausalLM

from nemot import vocab
from nemot.backend import replica_context
from nemot.config import NeMoTConfig
from nemot.models.losses import NeMoTLoss
from nemot.models.nemot_preprocessor import NeMoTPreprocessor
from nemot.models.weights import transfer_weights


def default_preprocessor(task_cls, config, task="gqa"):
    """The task's preprocessor for ``config``'s text length, GPT-2's default files."""
    task = task if task in config.output_blocks else config.output_blocks[0]
    preprocessor_cls = task_cls.preprocessor_cls
    return preprocessor_cls(preprocessor_cls.tokenizer_cls(),
                            sequence_length=config.max_text_length, task=task)


class TextToTextCausalLM(CausalLM):
    """Base of nemot's causal LM tasks (module docstring). Subclasses set ``backbone_cls``,
    ``loss_terms`` and ``default_loss``, make their heads in ``make_heads`` and apply them
    to the backbone's outputs in ``heads``."""

    preprocessor_cls = NeMoTPreprocessor
    loss_terms = ("task", "lm", "vanilla")
    default_loss = NeMoTLoss()

    def __init__(self, backbone, preprocessor=None, **kwargs):
        compile_now = kwargs.pop("compile", True)
        # === Layers ===
        self.backbone = backbone
        self.preprocessor = preprocessor
        self.make_heads()
        # === Functional model (KerasHub's tasks are functional models) ===
        inputs = backbone.input
        super().__init__(inputs=inputs, outputs=self.heads(backbone(inputs)), compile=False,
                         **kwargs)
        self._loss_term_trackers = {
            term: keras.metrics.Mean(name=f"{term}_loss") for term in self.loss_terms}
        if compile_now:
            self.compile()

    @property
    def config(self):
        """The backbone's ``NeMoTConfig``."""
        return self.backbone.config

    @property
    def supports_cache(self):
        return self.backbone.supports_cache

    def check_batch(self, token_ids):
        self.backbone.check_batch(token_ids)

    # ---- training ----

    def compile(self, optimizer="auto", loss="auto", *, weighted_metrics="auto",
                sampler="greedy", **kwargs):
        """KerasHub's ``CausalLM.compile`` with nemot's defaults: the loss is a
        :class:`NeMoTLoss` (``"auto"`` or None: the task's ``default_loss``, eq. 3.17), the
        loss terms are the metrics (``"auto"`` adds no token accuracy) and decoding is
        greedy (the thesis)."""
        if loss is None or (isinstance(loss, str) and loss == "auto"):
            loss = self.default_loss
        if not isinstance(loss, NeMoTLoss):
            raise TypeError(f"loss={loss!r}: expected a nemot.NeMoTLoss (its weights switch "
                            "the three terms of thesis eq. 3.17)")
        self.on_compile_loss(loss)
        if isinstance(weighted_metrics, str) and weighted_metrics == "auto":
            weighted_metrics = None
        super().compile(optimizer=optimizer, loss=loss, weighted_metrics=weighted_metrics,
                        sampler=sampler, **kwargs)

    def compile_from_config(self, config):
        """Compile as the saved model was (Keras skips a custom ``compile`` otherwise), and
        build the optimizer, as Keras does, so that its saved slots load into it."""
        self.compile(**keras.saving.deserialize_keras_object(config))
        if self.built:
            self.optimizer.build(self.trainable_variables)

    def on_compile_loss(self, loss):
        """Hook for tasks whose layers depend on the active terms."""

    @property
    def nemot_loss(self):
        """The compiled :class:`NeMoTLoss` (None before ``compile``)."""
        loss = getattr(self, "loss", None)
        return loss if isinstance(loss, NeMoTLoss) else None

    def needs_output(self, term):
        """Whether the compiled loss reads ``term``'s output (True before compile)."""
        return self.nemot_loss is None or bool(self.nemot_loss.weights()[term])

    @property
    def metrics(self):
        inactive = [tracker for term, tracker in self._loss_term_trackers.items()
                    if not self.needs_output(term)]
        return [m for m in super().metrics if all(m is not t for t in inactive)]

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.nemot_loss is None:
            raise ValueError("compile the model first: model.compile(optimizer, "
                             "loss=nemot.NeMoTLoss(...))")
        total = self.nemot_loss(y, y_pred, tracker=self)
        if self.losses:
            # Keras's own compute_loss scales the regularisers per replica likewise.
            context = replica_context()
            scale = 1.0 if context is None else 1.0 / context.num_replicas_in_sync
            total = total + ops.sum(self.losses) * scale
        return total

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Keras's, with the metrics of ``compile`` on the main head: its logits against
        the task targets, the positions that do not count given as ``<pad>`` with weight
        0 (as GPT-2's padding)."""
        counts = ops.not_equal(y["task_targets"], vocab.IGNORE_ID)
        weight = ops.cast(counts, "float32")
        if sample_weight is not None:
            weight = weight * ops.cast(sample_weight, "float32")
        return super().compute_metrics(x, ops.where(counts, y["task_targets"], vocab.PAD_ID),
                                       y_pred["logits"], sample_weight=weight)

    def preprocess_samples(self, x, y=None, sample_weight=None):
        """Formatted examples through the preprocessor; token ids checked and passed on."""
        if isinstance(x, dict) and "token_ids" in x:
            return keras.utils.pack_x_y_sample_weight(self.checked(x), y, sample_weight)
        if self.preprocessor is None:
            raise ValueError(f"{type(self).__name__} has no preprocessor: give it "
                             "{'token_ids': ...} with its targets")
        return self.preprocessor(x, y=y, sample_weight=sample_weight)

    def train_on_batch(self, x, y=None, sample_weight=None, **kwargs):
        """KerasHub's, with NeMoT's targets: a dict (``task_targets``, ``lm_targets``)."""
        return keras.Model.train_on_batch(self, *self._batch(x, y, sample_weight), **kwargs)

    def test_on_batch(self, x, y=None, sample_weight=None, **kwargs):
        """KerasHub's, with NeMoT's targets: a dict (``task_targets``, ``lm_targets``)."""
        return keras.Model.test_on_batch(self, *self._batch(x, y, sample_weight), **kwargs)

    def _batch(self, x, y, sample_weight):
        data = keras.utils.unpack_x_y_sample_weight(self.preprocess_samples(x, y, sample_weight))
        return tuple(None if v is None else keras.tree.map_structure(ops.convert_to_tensor, v)
                     for v in data)

    def checked(self, x):
        """``x`` with its token ids checked on the host as they are read (the error of
        calling the model; a compiled train step cannot raise on values)."""
        token_ids = x["token_ids"]
        if not _is_symbolic(token_ids):
            self.check_batch(np.asarray(token_ids))
            return x
        from nemot.data.tf_errors import checked_token_ids  # a tf.data pipeline is being traced

        self.backbone.inputs_layer.check_rank(token_ids.shape)
        width = token_ids.shape[1]
        if width is not None:
            self.backbone.check_text_length(width - vocab.NUM_AUX)
        return checked_token_ids(x, self.check_batch)

    def make_train_function(self, force=False):
        """Keras's, after building the optimizer, raising a Python error of the data (a task
        token no block serves, a ``DataError`` naming a file and line) as itself rather
        than as TensorFlow's ``OpError`` (:func:`nemot.data.tf_errors.python_errors`)."""
        if self.train_function is not None and not force:
            return self.train_function
        self._heads_follow_lora()
        if not self.optimizer.built:
            # Slots made before the step is traced: the routing rule reads them as it is
            # traced, and a step that made them would be traced twice (~20 s of a CPU for
            # NeMoT). Not at compile: a task compiles when it is built.
            self.optimizer.build(self.trainable_variables)
        super().make_train_function(force)
        self.train_function = _raising_python_errors(self.train_function)
        return self.train_function

    def _heads_follow_lora(self):
        """The heads train as GPT-2's head (its token embedding) does: once the backbone
        trains LoRA kernels only (KerasHub's ``backbone.enable_lora``), the heads' own
        weights are frozen too (LoRA kernels of their own, if enabled, train)."""
        if not any(_is_lora(v) for v in self.backbone.trainable_weights):
            return
        for layer in self.layers:
            if layer is not self.backbone:
                for variable in layer.trainable_weights:
                    variable.trainable = _is_lora(variable)

    def make_test_function(self, force=False):
        """Keras's, raising the data's Python errors as themselves (as in training)."""
        if self.test_function is not None and not force:
            return self.test_function
        super().make_test_function(force)
        self.test_function = _raising_python_errors(self.test_function)
        return self.test_function

    def predict(self, x, *args, **kwargs):
        """KerasHub's, raising the data's Python errors as themselves (Keras reads the
        batches of ``predict`` outside its compiled function)."""
        from nemot.data.tf_errors import python_errors

        with python_errors():
            return super().predict(x, *args, **kwargs)

    # ---- generation ----

    def generate(self, inputs, max_new_tokens=32, stop_token_ids="auto", strip_prompt=False,
                 task=None, mode=None, sampler=None, batch_size=None):
        """Generate from prompts: strings in, strings out (KerasHub's ``generate``).

        Args:
            inputs: a formatted prompt (``"<p1> passage <q> question <sep>"``), a list of
                them, or a dict of fields (:class:`NeMoTPreprocessor`); without a
                preprocessor, lists of token ids (auxiliary tokens first).
            max_new_tokens: most tokens generated per prompt.
            stop_token_ids: ``"auto"`` (``</s>``), None (never stop early) or ids.
            strip_prompt: return the generated text only (default: prompt and answer,
                as KerasHub does).
            task: the task token's name (default: the preprocessor's ``task``).
            mode: ``"dec"`` (default); cached decoding implements the decoder mask only.
            sampler: a ``keras_hub.samplers`` sampler or its name (default: the one of
                ``compile``, greedy unless set).
            batch_size: prompts per compiled call (default: all at once).
        """
        from nemot.models.generation import generate

        stop = (vocab.END_ID,) if isinstance(stop_token_ids, str) and stop_token_ids == "auto" \
            else tuple(stop_token_ids or ())
        single = isinstance(inputs, (str, bytes))
        if self.preprocessor is None:
            prompts = [list(map(int, p)) for p in inputs]
        else:
            prompts = self.preprocessor.generate_preprocess(inputs, task=task, mode=mode)
        ids = generate(self, prompts, max_new_tokens=max_new_tokens,
                       sampler=sampler if sampler is not None else self.sampler,
                       batch_size=batch_size, stop_token_ids=stop)
        if self.preprocessor is None:
            return ids
        texts = self.preprocessor.generate_postprocess(
            ids if strip_prompt else [p[vocab.NUM_AUX:] + g for p, g in zip(prompts, ids)])
        return texts[0] if single else texts

    # ---- presets ----

    @classmethod
    def from_preset(cls, preset, load_weights=True, vocab_padding=None, **kwargs):
        """The task of a preset directory (``save_to_preset``), or an architecture by name.

        Args:
            preset: a preset directory (KerasHub's layout), or a ``NeMoTConfig`` preset
                name (``"thesis"``, ``"small"``, ``"tiny"``). No NeMoT weights are
                published, so a name needs ``load_weights=False``.
            load_weights: load the saved weights (False: fresh ones).
            vocab_padding: the model's ``vocab_padding`` (default: the preset's); the
                saved heads' columns are fitted to it.

        Example:
            >>> lm = NeMoTCausalLM.from_preset("tiny", load_weights=False)
            >>> lm.save_to_preset("my_nemot")
            >>> same = keras_hub.models.CausalLM.from_preset("my_nemot")
            >>> padded = NeMoTCausalLM.from_preset("my_nemot", vocab_padding=64)
        """
        if isinstance(preset, (str, os.PathLike)) and not os.path.isdir(preset):
            config = cls.config_for_preset(str(preset))
            if load_weights:
                raise ValueError(
                    f"preset {str(preset)!r} names an architecture; no weights are published "
                    f"for it. {cls.__name__}.from_preset({str(preset)!r}, load_weights=False) "
                    "builds it with fresh weights; a directory written by save_to_preset "
                    "loads trained ones")
            if vocab_padding is not None:
                config = config.replace(vocab_padding=vocab_padding)
            return cls.from_config_object(config, **kwargs)
        model = super().from_preset(os.fspath(preset), load_weights=load_weights, **kwargs)
        if vocab_padding is None or vocab_padding == model.config.vocab_padding:
            return model
        padded = type(model).from_config_object(
            model.config.replace(vocab_padding=vocab_padding), preprocessor=model.preprocessor,
            dtype=model.backbone.dtype_policy)
        if load_weights:
            transfer_weights(model, padded)
        return padded

    def save_to_preset(self, preset_dir, **kwargs):
        """KerasHub's; its metadata names the task as KerasHub names GPT-2's
        (``"CausalLM"``) rather than by nemot's shared base class."""
        super().save_to_preset(preset_dir, **kwargs)
        metadata_file = os.path.join(preset_dir, "metadata.json")
        with open(metadata_file) as f:
            metadata = json.load(f)
        metadata["tasks"] = sorted({CausalLM.__name__ if name == TextToTextCausalLM.__name__
                                    else name for name in metadata["tasks"]})
        with open(metadata_file, "w") as f:
            json.dump(metadata, f, indent=4)

    def save_task_weights(self, filepath):
        """KerasHub's, without the optimizer's state: a preset holds weights, and its
        loader compiles a fresh optimizer (GPT-2's heads are its backbone's: it saves none)."""
        with _optimizer_hidden(self):
            super().save_task_weights(filepath)

    def load_task_weights(self, filepath):
        """KerasHub's, ignoring an optimizer state saved beside the heads."""
        with _optimizer_hidden(self):
            super().load_task_weights(filepath)

    @classmethod
    def config_for_preset(cls, name):
        """The ``NeMoTConfig`` a preset name stands for."""
        try:
            return NeMoTConfig.preset(name)
        except ValueError as error:
            raise ValueError(
                f"preset {name!r}: not a directory, and {error}. GPT-2 weights (a KerasHub "
                "GPT-2 preset such as 'gpt2_base_en', or a Hugging Face GPT-2 directory) start "
                "a model through nemot.build_model(config, gpt2=...)") from None

    @classmethod
    def from_config_object(cls, config, preprocessor="default", **kwargs):
        """The task of a ``NeMoTConfig`` with fresh weights (``dtype``: the backbone's and
        heads' dtype policy, as in KerasHub's ``from_preset``)."""
        backbone = cls.backbone_cls(config, dtype=kwargs.pop("dtype", None))
        if isinstance(preprocessor, str) and preprocessor == "default":
            preprocessor = default_preprocessor(cls, backbone.config)
        return cls(backbone=backbone, preprocessor=preprocessor, **kwargs)

    def parameter_breakdown(self):
        """Parameters per component; ``total`` is their sum (every weight counted once)."""
        raise NotImplementedError


def _is_lora(variable):
    """Whether ``variable`` is a LoRA factor (``enable_lora`` of Keras' Dense, EinsumDense
    and Embedding: ``lora_kernel_a``, ``lora_embeddings_b``...)."""
    return variable.name.startswith("lora_")


@contextlib.contextmanager
def _optimizer_hidden(model):
    """``model`` without its optimizer (Keras saves and loads a compiled model's optimizer
    state with its weights)."""
    optimizer, model.optimizer = model.optimizer, None
    try:
        yield
    finally:
        model.optimizer = optimizer


def _raising_python_errors(function):
    def call(*args, **kwargs):
        from nemot.data.tf_errors import python_errors

        with python_errors():
            return function(*args, **kwargs)

    return call


def _is_symbolic(tensor):
    """Whether ``tensor`` is a graph tensor (a ``tf.data`` map or a traced function)."""
    try:
        np.asarray(tensor)
    except (TypeError, ValueError, NotImplementedError):
        return True
    return False
