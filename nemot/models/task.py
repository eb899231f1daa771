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
import sys

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

    # Override: the loss must be a NeMoTLoss (the combined loss, eq. 3.17); greedy by default.
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

    # Override: Keras skips a custom compile when loading: the combined loss is restored here.
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

    # Override: a term the combined loss does not read reports no metric.
    @property
    def metrics(self):
        inactive = [tracker for term, tracker in self._loss_term_trackers.items()
                    if not self.needs_output(term)]
        return [m for m in super().metrics if all(m is not t for t in inactive)]

    # Override: the combined loss over two heads and two targets.
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        if self.nemot_loss is None:
            raise ValueError("compile the model first: model.compile(optimizer, "
                             "loss=nemot.NeMoTLoss(...))")
        total = self.nemot_loss(*self.loss_inputs(y, y_pred), tracker=self)
        if self.losses:
            # Keras's own compute_loss scales the regularisers per replica likewise.
            context = replica_context()
            scale = 1.0 if context is None else 1.0 / context.num_replicas_in_sync
            total = total + ops.sum(self.losses) * scale
        return total

    def loss_inputs(self, y, y_pred):
        """``(y, y_pred)`` as the combined loss reads them (a task whose training outputs
        leave part of a head to the loss completes them here)."""
        return y, y_pred

    # Override: user metrics read the main head against the task targets (two heads, two targets).
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

    # Override: the targets are a dict of two (the combined loss); ids checked on the host.
    def preprocess_samples(self, x, y=None, sample_weight=None):
        """Formatted examples through the preprocessor; token ids checked and passed on."""
        if isinstance(x, dict) and "token_ids" in x:
            return keras.utils.pack_x_y_sample_weight(self.checked(x), y, sample_weight)
        if self.preprocessor is None:
            raise ValueError(f"{type(self).__name__} has no preprocessor: give it "
                             "{'token_ids': ...} with its targets")
        return self.preprocessor(x, y=y, sample_weight=sample_weight)

    # Override: KerasHub's makes y one tensor; the combined loss's targets are a dict of two.
    def train_on_batch(self, x, y=None, sample_weight=None, **kwargs):
        """KerasHub's, with NeMoT's targets: a dict (``task_targets``, ``lm_targets``)."""
        return keras.Model.train_on_batch(self, *self._batch(x, y, sample_weight), **kwargs)

    # Override: as train_on_batch.
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

    # Override: the routing rule reads the optimizer's slots as the step is traced: built first.
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

    # Override: a data error (file, line) is raised as itself, not as TensorFlow's OpError.
    def make_test_function(self, force=False):
        """Keras's, raising the data's Python errors as themselves (as in training)."""
        if self.test_function is not None and not force:
            return self.test_function
        super().make_test_function(force)
        self.test_function = _raising_python_errors(self.test_function)
        return self.test_function

    # Override: as make_test_function, for the batches predict reads outside its function.
    def predict(self, x, *args, **kwargs):
        """KerasHub's, raising the data's Python errors as themselves (Keras reads the
        batches of ``predict`` outside its compiled function)."""
        with _python_errors():
            return super().predict(x, *args, **kwargs)

    # ---- generation: KerasHub's generate drives these hooks ----

    # Override: NeMoT's max_new_tokens, task and mode around KerasHub's generate.
    def generate(self, inputs, max_length=None, stop_token_ids="auto", strip_prompt=False, *,
                 max_new_tokens=None, task=None, mode=None):
        """KerasHub's ``generate`` (strings in, strings out; a list, a ``tf.data.Dataset``,
        ``max_length``, ``stop_token_ids``, ``strip_prompt``, the sampler of ``compile``),
        with NeMoT's three additions.

        Args:
            inputs: a formatted prompt (``"<p1> passage <q> question <sep>"``), a list of
                them, a dict of fields (:class:`NeMoTPreprocessor`) or a ``tf.data.Dataset``
                of either; without a preprocessor, ``{"token_ids", "padding_mask"}`` of
                ``[batch, 3 + n]`` (auxiliary tokens first, ``padding_mask`` False at them
                and after each prompt).
            max_length: text positions of prompt and answer together (KerasHub's meaning;
                default: the preprocessor's ``sequence_length``).
            max_new_tokens: most tokens generated per prompt, whatever its length (NeMoT's;
                the buffer is then the longest prompt, rounded up to 64, plus these).
            task: the task token's name (default: the preprocessor's ``task``).
            mode: ``"dec"`` (default); cached decoding implements the decoder mask only.
        """
        from nemot.models.generation import check_generate_inputs

        check_generate_inputs(inputs, has_preprocessor=self.preprocessor is not None)
        if max_new_tokens is not None and (not isinstance(max_new_tokens, int)
                                           or isinstance(max_new_tokens, bool)
                                           or max_new_tokens < 1):
            raise ValueError(f"max_new_tokens={max_new_tokens!r}: expected a positive int")
        if mode not in (None, "dec"):
            raise ValueError(f"mode={mode!r}: cached decoding implements the decoder mask only; "
                             "expected 'dec'")
        if max_length is not None:
            self.backbone.check_text_length(max_length)
        if self.preprocessor is None:
            if task is not None or mode is not None or max_new_tokens is not None:
                raise ValueError("task, mode and max_new_tokens need a preprocessor; token ids "
                                 "carry their own auxiliary tokens and length")
            return super().generate(inputs, max_length, stop_token_ids, strip_prompt)
        if task is not None:  # a clear error now for a task token no block serves
            self.check_batch(np.array([vocab.aux_ids("dec", task) + [vocab.PAD_ID]]))
        with self.preprocessor.generation_options(task=task, mode=mode,
                                                  max_new_tokens=max_new_tokens):
            return super().generate(inputs, max_length, stop_token_ids, strip_prompt)

    def _build_cache(self, token_ids, padding_mask, pos_tags=None):
        """KerasHub's hook: the caches for ``token_ids`` [batch, 3 + L], seeded with the
        auxiliary tokens and every text position (``padding_mask`` [batch, 3 + L] True at
        the prompts' text; ``pos_tags`` [batch, L] with highlighting). Returns
        ``(hidden_states, cache)``."""
        aux_ids, text_ids = token_ids[:, :vocab.NUM_AUX], token_ids[:, vocab.NUM_AUX:]
        cache = self.backbone.init_cache(ops.shape(text_ids)[0], ops.shape(text_ids)[1])
        # No head here: the sampler's first step asks for its logits through call_with_cache.
        return self._cached_pass(text_ids, dict(cache, aux_ids=aux_ids), 0,
                                 padding_mask[:, vocab.NUM_AUX:], pos_tags)

    def call_with_cache(self, token_ids, cache, cache_update_index):
        """KerasHub's hook: the text tokens ``token_ids`` [batch, q] at text positions
        ``[cache_update_index, + q)`` against the caches of :meth:`_build_cache`. Returns
        ``(logits, hidden_states, cache)``."""
        written = ops.ones((ops.shape(token_ids)[0], ops.shape(cache["vanilla"])[3]), "bool")
        hidden_states, cache = self._cached_pass(token_ids, cache, cache_update_index, written)
        return self.head(hidden_states), hidden_states, cache

    def _cached_pass(self, text_ids, cache, cache_update_index, text_valid, pos_tags=None):
        if not self.supports_cache:
            raise ValueError(f"{type(self.backbone).__name__} keeps no key/value cache: it "
                             "decodes by recomputation (supports_cache is False)")
        aux_ids = cache["aux_ids"]
        sets = {key: value for key, value in cache.items() if key != "aux_ids"}
        text_mask, nm_mask = self.backbone.decoding_masks(
            text_valid, cache_update_index, ops.shape(text_ids)[1], sets)
        out = self.backbone.forward(aux_ids, text_ids, text_mask, nm_mask, pos_tags, cache=sets,
                                    cache_update_index=cache_update_index)
        return out["hidden_states"], dict(out["cache"], aux_ids=aux_ids)

    def generate_step(self, inputs, stop_token_ids=None, sampler=None):
        """KerasHub's hook: decode one batch, ``{"token_ids", "padding_mask"}`` of
        :meth:`NeMoTPreprocessor.generate_preprocess` (``"generation_end"`` [batch], the
        text position after each example's last allowed token, is optional), with
        ``sampler`` (default: the one of ``compile``). A model whose modulations keep no
        cache (PALs) recomputes the whole sequence for each token. Returns
        ``{"token_ids", "padding_mask"}`` with the generated positions marked."""
        sampler = self.sampler if sampler is None else sampler
        token_ids, padding_mask = inputs["token_ids"], inputs["padding_mask"]
        aux_ids, text_ids = token_ids[:, :vocab.NUM_AUX], token_ids[:, vocab.NUM_AUX:]
        prompt_mask = padding_mask[:, vocab.NUM_AUX:]
        generation_end = inputs.get("generation_end")
        if self.supports_cache:
            hidden_states, cache = self._build_cache(token_ids, padding_mask)
        else:
            hidden_states = self.backbone(token_ids, training=False)["hidden_states"]
            cache = {"aux_ids": aux_ids}
        if generation_end is not None:
            cache = dict(cache, generation_end=ops.cast(generation_end, "int32"))
        stop_logits = None
        if stop_token_ids:
            # An example past its own generation_end is made to emit a stop token, so the
            # loop ends once every example is done, however long the buffer is.
            is_stop = ops.arange(self.config.vocab_size) == stop_token_ids[0]
            stop_logits = ops.where(is_stop, 0.0, -1e9)[None]

        def next(prompt, cache, index):
            end = cache.get("generation_end")
            sets = {k: v for k, v in cache.items() if k != "generation_end"}
            if self.supports_cache:
                # Run the token at index - 1 (already decided) to predict index.
                token = ops.slice(prompt, [0, index - 1], [ops.shape(prompt)[0], 1])
                logits, hidden, sets = self.call_with_cache(token, sets, index - 1)
                logits, hidden = logits[:, 0], hidden[:, 0]
            else:
                logits, hidden = self._recomputed(sets["aux_ids"], prompt, index - 1)
            logits = ops.cast(logits, "float32")
            if stop_logits is not None and end is not None:
                logits = ops.where(ops.greater_equal(index, end)[:, None], stop_logits, logits)
            return logits, hidden, sets if end is None else dict(sets, generation_end=end)

        index = ops.min(ops.sum(ops.cast(prompt_mask, "int32"), axis=-1))
        text_ids = sampler(next=next, prompt=text_ids, cache=cache, index=index,
                           mask=prompt_mask, stop_token_ids=stop_token_ids,
                           hidden_states=hidden_states, model=self)
        return {"token_ids": ops.concatenate([aux_ids, text_ids], axis=1),
                "padding_mask": ops.concatenate(
                    [ops.zeros(ops.shape(aux_ids), "bool"),
                     generated_mask(text_ids, prompt_mask, stop_token_ids, generation_end)],
                    axis=1)}

    def _recomputed(self, aux_ids, text_ids, position):
        """Main-head logits and hidden states at text ``position`` of a full pass."""
        token_ids = ops.concatenate([aux_ids, text_ids], axis=1)
        out = self.backbone(token_ids, training=False)
        hidden = ops.take(out["hidden_states"], position, axis=1)
        return self.head(hidden), hidden

    # ---- presets ----

    # Override: architecture names ('tiny', 'thesis') and vocab_padding.
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

    # Override: a preset holds no optimizer state; its metadata names the task "CausalLM".
    def save_to_preset(self, preset_dir, **kwargs):
        """KerasHub's, without the optimizer's state (a preset holds weights, and its loader
        compiles a fresh optimizer; GPT-2's heads are its backbone's, so it saves none); its
        metadata names the task as KerasHub names GPT-2's (``"CausalLM"``) rather than by
        nemot's shared base class."""
        with _optimizer_hidden(self):
            super().save_to_preset(preset_dir, **kwargs)
        metadata_file = os.path.join(preset_dir, "metadata.json")
        with open(metadata_file) as f:
            metadata = json.load(f)
        metadata["tasks"] = sorted({CausalLM.__name__ if name == TextToTextCausalLM.__name__
                                    else name for name in metadata["tasks"]})
        with open(metadata_file, "w") as f:
            json.dump(metadata, f, indent=4)

    # Override: a preset holds no optimizer state (nor warns of one, saved by an earlier nemot).
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


def generated_mask(text_ids, prompt_mask, stop_token_ids, generation_end=None):
    """bool [batch, L]: the prompt and the generated tokens up to and including the first
    stop token after the prompt (KerasHub's ``padding_mask`` of a generation), and nothing
    at or after ``generation_end``."""
    if stop_token_ids:
        generated = ops.logical_not(prompt_mask)
        ends = ops.zeros(ops.shape(text_ids), "bool")
        for stop in stop_token_ids:
            ends = ops.logical_or(ends, ops.logical_and(generated, ops.equal(text_ids, stop)))
        ends = ops.cast(ends, "int32")
        mask = ops.equal(ops.cumsum(ends, axis=-1) - ends, 0)
    else:
        mask = ops.ones(ops.shape(text_ids), "bool")
    if generation_end is not None:
        positions = ops.arange(ops.shape(text_ids)[1], dtype="int32")[None]
        mask = ops.logical_and(mask, positions < ops.cast(generation_end, "int32")[:, None])
    return mask


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


def _python_errors():
    """:func:`nemot.data.tf_errors.python_errors`; nothing to catch where TensorFlow was
    never imported (JAX without TensorFlow installed: no ``tf.data`` pipeline ran)."""
    if "tensorflow" not in sys.modules:
        return contextlib.nullcontext()
    from nemot.data.tf_errors import python_errors

    return python_errors()


def _raising_python_errors(function):
    def call(*args, **kwargs):
        with _python_errors():
            return function(*args, **kwargs)

    return call


def _is_symbolic(tensor):
    """Whether ``tensor`` is a graph tensor (a ``tf.data`` map or a traced function)."""
    try:
        np.asarray(tensor)
    except (TypeError, ValueError, NotImplementedError):
        return True
    return False
