"""Generation (docs/spec.md section 6): token by token, cached where the model has caches.

Generation lives here for every model (NeMoT, the GPT-2 baseline, ...):
:func:`generate` runs token by token until ``</s>``, a length limit or the end of the
window, batched (token ids in and out; ``NeMoTCausalLM.generate`` is KerasHub's own
``generate``, strings around the same loop). A model with key/value caches (NeMoT has
them in all three sets; ``<dec>`` mode only) runs its ``generate_step`` (KerasHub's hook,
over ``_build_cache`` and ``call_with_cache``): a ``keras_hub.samplers`` sampler (greedy
by default, the thesis behaviour; ``"top_k"``, ``"top_p"``, ``"random"``, ``"beam"``,
``"contrastive"`` also work) runs ``ops.while_loop`` inside one compiled function
(``tf.function`` on TensorFlow, ``jax.jit`` on JAX). A model without one decodes greedily
by recomputing the whole sequence per token (:func:`generate_by_recomputation`).
Multiple choice (label mode and option scoring) is evaluation's:
:mod:`nemot.evaluation.choices`.

Generation (:class:`Generator`, :func:`generate`) refuses a model with the highlighting
reading strategy (``reading_strategies`` has ``"highlighting"``): generated tokens would
need POS tags the data pipeline never gave in training (their words are not finished
while they are generated). The thesis evaluated its highlighting runs in label mode only.

Right-padded prompts of different lengths are handled the KerasHub way: the
loop starts after the shortest prompt and at every position still inside a
longer prompt that example keeps its own prompt token. So each example gets
exactly the tokens it would get alone.

Example:

>>> model = nemot.build_model(nemot.NeMoTConfig.preset("tiny"))
>>> prompts = [[CLS_ID, DEC_ID, GQA_ID, Q_ID, 464, SEP_ID]]     # aux tokens + prompt
>>> generate(model, prompts, max_new_tokens=8)                 # doctest: +SKIP
[[...]]                                                        # generated ids, no </s>
"""

import dataclasses

import numpy as np
from keras import ops

from nemot import backend, vocab
from nemot.data.pos_tags import needs_pos_tags

# Prompt widths are rounded up to a multiple of this when the buffer is sized from
# max_new_tokens, so that batches of similar prompts share one compiled loop.
PROMPT_ROUNDING = 64
# KerasHub's samplers by name (keras_hub.samplers.get).
SAMPLERS = ("greedy", "top_k", "top_p", "random", "beam", "contrastive")


def get_sampler(sampler=None):
    """A ``keras_hub.samplers.Sampler``: ``None`` is greedy; names go to ``keras_hub.samplers.get``.

    >>> type(get_sampler("top_k")).__name__
    'TopKSampler'
    """
    import keras_hub

    if sampler is None:
        return keras_hub.samplers.GreedySampler()
    if isinstance(sampler, str):
        name, sampler = sampler, keras_hub.samplers.get(sampler)
        if not isinstance(sampler, keras_hub.samplers.Sampler):
            raise ValueError(f"sampler {name!r}: expected one of {SAMPLERS} (KerasHub's "
                             "samplers)")
    if not isinstance(sampler, keras_hub.samplers.Sampler):
        raise TypeError(f"sampler must be a keras_hub.samplers.Sampler or its name, "
                        f"got {type(sampler).__name__}")
    return sampler


def check_prompts(model, prompts, need_room=1):
    """Check aux tokens and lengths of ``prompts`` (lists of aux + text ids) for ``model``.

    Raises a ``ValueError`` naming the prompt index for a mode other than
    ``<dec>`` (the caches implement the decoder mask only), a task token without
    an output block, an empty text, or a text leaving fewer than ``need_room``
    positions of ``config.max_text_length``.
    """
    cfg = model.config
    a = vocab.NUM_AUX
    prompts = [list(map(int, p)) for p in prompts]
    if not prompts:
        raise ValueError("no prompts given")
    for i, prompt in enumerate(prompts):
        text_length = len(prompt) - a
        if text_length < 1:
            raise ValueError(f"prompt {i}: expected {a} auxiliary tokens and at least one text "
                             f"token, got {len(prompt)} ids")
        # The caches implement the decoder mask only: <dec> prompts.
        vocab.check_aux_tokens([prompt[:a]], cfg.output_blocks, where=f"prompt {i}",
                               modes=("dec",))
        if text_length + need_room > cfg.max_text_length:
            raise ValueError(f"prompt {i}: {text_length} text tokens leave no room for "
                             f"{need_room} more within max_text_length={cfg.max_text_length}")
    return prompts


def check_generation_supported(model):
    """A clear error for models that cannot generate: those with highlighting."""
    if needs_pos_tags(getattr(model, "config", None)):
        raise ValueError(
            "generation with the highlighting reading strategy is not supported: generated "
            "tokens would need POS tags the model never saw in training. Evaluate such a "
            "model on multiple choice in label mode (predict_labels, `nemot evaluate "
            "--mc-mode label`) or score mode (score_options, `--mc-mode score`)")


def pad_prompts(prompts, num_aux, width=None, pad_id=vocab.PAD_ID):
    """``(aux_ids [B, a], text_ids [B, width], lengths [B])`` of right-padded prompts."""
    lengths = np.array([len(p) - num_aux for p in prompts], dtype=np.int32)
    width = int(lengths.max()) if width is None else width
    aux = np.array([p[:num_aux] for p in prompts], dtype=np.int32)
    text = np.full((len(prompts), width), pad_id, dtype=np.int32)
    for row, prompt in enumerate(prompts):
        text[row, :lengths[row]] = prompt[num_aux:]
    return aux, text, lengths


@dataclasses.dataclass(frozen=True)
class Generation:
    """Generated ids of one prompt: ``ids`` without the stop token; ``stopped`` if one came."""

    ids: list
    stopped: bool


def check_generate_inputs(inputs, has_preprocessor=True):
    """The ``TypeError``/``ValueError`` of prompts ``generate`` cannot take, naming what was
    given: text (a string, a list of strings, a dict of fields or a ``tf.data.Dataset``)
    with a preprocessor, ``{"token_ids", "padding_mask"}`` without one."""
    if type(inputs).__name__.endswith("Dataset") or hasattr(inputs, "element_spec"):
        return
    if not has_preprocessor:
        if not (isinstance(inputs, dict) and {"token_ids", "padding_mask"} <= set(inputs)):
            raise TypeError(f"generate: got {type(inputs).__name__}; a model without a "
                            "preprocessor takes {'token_ids', 'padding_mask'} (auxiliary "
                            "tokens first)")
        return
    if isinstance(inputs, dict):
        values = list(inputs.values())
    elif isinstance(inputs, (str, bytes)):
        values = [inputs]
    elif isinstance(inputs, (list, tuple)) or (isinstance(inputs, np.ndarray)
                                               and inputs.dtype.kind in "OSU"):
        values = list(inputs)
        if not values:
            raise ValueError("generate: got an empty list of prompts; expected at least one "
                             "formatted prompt, e.g. '<q> Is the sky blue? <sep>'")
    elif hasattr(inputs, "dtype") and str(inputs.dtype) == "string":  # a tf.Tensor of text
        return
    else:
        raise TypeError(f"generate: got {type(inputs).__name__} ({str(inputs)[:40]!r}); "
                        "expected a formatted prompt (str), a list of them, a dict of fields "
                        "or a tf.data.Dataset of prompts")
    for value in values if not isinstance(inputs, dict) else []:
        if not isinstance(value, (str, bytes, np.str_, np.bytes_)):
            raise TypeError(f"generate: a prompt is {type(value).__name__} ({value!r}); "
                            "expected text in the unified format")


def decoding_inputs(prompts, length):
    """``{"token_ids", "padding_mask"}`` [B, 3 + length] of id prompts (aux + text ids)
    for a model's ``generate_step``, and the prompts' text lengths [B]."""
    aux, text, lengths = pad_prompts(prompts, vocab.NUM_AUX, width=length)
    token_ids = np.concatenate([aux, text], axis=1)
    padding_mask = np.concatenate([np.zeros(aux.shape, bool),
                                   np.arange(length)[None] < lengths[:, None]], axis=1)
    return {"token_ids": token_ids, "padding_mask": padding_mask}, lengths


def split_generations(tokens, lengths, max_new_tokens, stop_token_ids):
    """:class:`Generation` of each row of the text ``tokens`` [B, L] after its prompt."""
    results = []
    for row, n in enumerate(lengths):
        ids = [int(t) for t in tokens[row, n:n + max_new_tokens]]
        stops = [k for k, t in enumerate(ids) if t in stop_token_ids]
        results.append(Generation(ids[:stops[0]] if stops else ids, bool(stops)))
    return results


class Generator:
    """Batched, cached generation with a sampler of its own: the model's ``generate_step``
    (KerasHub's hook, :class:`nemot.models.task.TextToTextCausalLM`) compiled once per
    shape.

    The buffer is ``prompt width + max_new_tokens`` text positions, capped by
    ``config.max_text_length`` (an example whose prompt is longer than the batch's
    shortest cannot get more than the cap allows). Prompt widths are rounded up to a
    multiple of ``pad_to_multiple_of`` so batches of similar lengths share one compiled
    function.

    Args:
        model: a nemot causal LM.
        sampler: a ``keras_hub.samplers`` sampler or its name; ``None`` = greedy.
        stop_token_ids: generation of an example ends at the first of these
            (default ``</s>``); ``()`` never stops early.
        jit_compile: XLA-compile the loop (TensorFlow; JAX always compiles it with
            ``jax.jit``); ``None`` = yes.
        pad_to_multiple_of: rounding of the prompt width.

    Raises:
        ValueError: the model uses the highlighting reading strategy (see the module
            docstring; :mod:`nemot.evaluation.choices` scores such a model).

    Example:
        >>> generator = Generator(model)
        >>> [g.ids for g in generator(prompts, max_new_tokens=16)]   # doctest: +SKIP
    """

    def __init__(self, model, sampler=None, stop_token_ids=(vocab.END_ID,), jit_compile=None,
                 pad_to_multiple_of=PROMPT_ROUNDING):
        check_generation_supported(model)
        self.model = model
        self.sampler = get_sampler(sampler)
        self.stop_token_ids = tuple(int(t) for t in stop_token_ids)
        self.pad_to_multiple_of = int(pad_to_multiple_of)
        self.jit_compile = True if jit_compile is None else bool(jit_compile)
        self._compiled = None

    def generate_step(self, inputs):
        return self.model.generate_step(inputs, self.stop_token_ids or None,
                                        sampler=self.sampler)["token_ids"]

    def _function(self):
        if self._compiled is None:
            self._compiled = backend.compile_function(
                self.generate_step, list(self.model.variables) + list(self.sampler.variables),
                jit_compile=self.jit_compile)
        return self._compiled

    def shapes(self, lengths, max_new_tokens):
        """``(rounded prompt width, buffer text length)`` for prompts of text ``lengths``."""
        return buffer_shapes(self.model.config.max_text_length, self.pad_to_multiple_of,
                             lengths, max_new_tokens)

    def generate_tokens(self, prompts, max_new_tokens=32):
        """``(tokens [B, L], lengths [B])``: prompts and generated text ids in one array, as
        the loop left it (positions the loop never reached keep ``<pad>``)."""
        check_max_new_tokens(max_new_tokens)
        prompts = check_prompts(self.model, prompts)
        _, length = self.shapes([len(p) - vocab.NUM_AUX for p in prompts], max_new_tokens)
        inputs, lengths = decoding_inputs(prompts, length)
        inputs["generation_end"] = (lengths + max_new_tokens).astype(np.int32)
        tokens = self._function()(inputs)
        return np.asarray(ops.convert_to_numpy(tokens))[:, vocab.NUM_AUX:], lengths

    def __call__(self, prompts, max_new_tokens=32):
        """:class:`Generation` of each prompt (aux + text ids, e.g. ``FormattedExample.prompt_ids``)."""
        tokens, lengths = self.generate_tokens(prompts, max_new_tokens)
        return split_generations(tokens, lengths, max_new_tokens, self.stop_token_ids)


def buffer_shapes(limit, multiple, lengths, max_new_tokens):
    """``(prompt width rounded up to multiple, prompt width + max_new_tokens)``, each capped
    by the window ``limit``."""
    width = min(-(-int(max(lengths)) // multiple) * multiple, limit - 1)
    return width, min(width + max_new_tokens, limit)


def check_max_new_tokens(max_new_tokens):
    if not isinstance(max_new_tokens, int) or isinstance(max_new_tokens, bool) \
            or max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive int, got {max_new_tokens!r}")


def has_cache(model):
    """Whether ``model`` decodes with a cache: a nemot causal LM (KerasHub's
    ``call_with_cache``) every part of which supports caching (``supports_cache``; PALs
    do not)."""
    return hasattr(model, "call_with_cache") and getattr(model, "supports_cache", False)


def generate(model, prompts, max_new_tokens=32, sampler=None, batch_size=None, **kwargs):
    """Generated ids (lists, stop token excluded) of every prompt.

    A model with a key/value cache (:func:`has_cache`) runs its ``generate_step``: with
    ``sampler=None`` and no other settings, the model's own compiled generation function
    (KerasHub's ``make_generate_function``: the sampler of its ``compile``, greedy unless
    set; traced once per buffer shape and kept with the model), else a
    :class:`Generator`. Any other model that maps ``{"token_ids"}`` to ``{"logits"}``
    decodes greedily by recomputation (:func:`generate_by_recomputation`). Either way an
    example stops at ``</s>``, after ``max_new_tokens`` or at the end of the model's
    window (``config.max_text_length`` text positions), and gets exactly the tokens it
    would get alone.

    Args:
        model: the model.
        prompts: lists of aux + text ids (``FormattedExample.prompt_ids``).
        max_new_tokens: most tokens generated per prompt.
        sampler: ``keras_hub.samplers`` sampler or name; ``None`` = the model's (greedy,
            the only choice without a cache).
        batch_size: prompts per model call (default all at once).
        **kwargs: more :class:`Generator` arguments (cached models only).
    """
    check_generation_supported(model)
    prompts = list(prompts)
    size = batch_size or len(prompts)
    batches = [prompts[first:first + size] for first in range(0, len(prompts), size)]
    if not has_cache(model):
        if not (sampler in (None, "greedy") or type(sampler).__name__ == "GreedySampler"):
            raise ValueError(f"{type(model).__name__} has no key/value cache; only greedy "
                             f"decoding (sampler=None) is available for it, got {sampler!r}")
        forward = CompiledForward(model) if backend.name() == "jax" else model
        return [ids for batch in batches
                for ids in generate_by_recomputation(forward, batch, max_new_tokens)]
    if sampler is None and not kwargs and hasattr(model, "make_generate_function"):
        run = _model_generation(model, max_new_tokens)
    else:
        run = Generator(model, sampler, **kwargs)
    out = []
    for batch in batches:
        # A short last batch is filled up with copies so that it reuses the compiled loop.
        filled = batch + [batch[0]] * (size - len(batch))
        out += [g.ids for g in run(filled, max_new_tokens)[:len(batch)]]
    return out


def _model_generation(model, max_new_tokens):
    """Generations of id prompts through the model's own compiled ``generate_step``."""
    check_max_new_tokens(max_new_tokens)
    stop = (vocab.END_ID,)

    def run(prompts, max_new_tokens):
        prompts = check_prompts(model, prompts)
        _, length = buffer_shapes(model.config.max_text_length, PROMPT_ROUNDING,
                                  [len(p) - vocab.NUM_AUX for p in prompts], max_new_tokens)
        inputs, lengths = decoding_inputs(prompts, length)
        inputs["generation_end"] = (lengths + max_new_tokens).astype(np.int32)
        outputs = model.make_generate_function()(inputs, stop_token_ids=stop)
        tokens = np.asarray(ops.convert_to_numpy(outputs["token_ids"]))[:, vocab.NUM_AUX:]
        return split_generations(tokens, lengths, max_new_tokens, stop)

    return run


class CompiledForward:
    """``model``'s inference forward pass (``{"token_ids"}`` to ``{"logits"}``) compiled
    once per input shape by :func:`nemot.backend.compile_function`, so that the weights
    are read when it runs (later weights are seen). :func:`generate` decodes a model
    without a cache through it on JAX, where an uncompiled call dispatches (and at first
    use compiles) every operation on its own: a tiny NeMoT hosting PALs decoded 4 tokens
    in 12.2 s that way and in 2.0 s compiled (2 CPU cores). TensorFlow's eager calls are
    cheap, and a trace would cost more than a short generation: there the model is called
    as it is. ``jit_compile``: XLA on TensorFlow (JAX always)."""

    def __init__(self, model, jit_compile=True):
        self.config = model.config
        self._logits = backend.compile_function(
            lambda token_ids: model({"token_ids": token_ids}, training=False)["logits"],
            model.variables, jit_compile=jit_compile)

    def __call__(self, inputs, training=False):
        if training:
            raise ValueError("CompiledForward runs inference only (training=False)")
        return {"logits": self._logits(inputs["token_ids"])}


def generate_by_recomputation(model, prompts, max_new_tokens=32, stop_token_ids=(vocab.END_ID,)):
    """Greedy decoding with a full forward pass per new token, no cache.

    For models without a cache, and as the reference a cache must reproduce.
    Each step runs the model on the whole right-padded buffer and writes the
    argmax at every unfinished example's next position; causality makes the
    padding after it irrelevant. Stops like :class:`Generator`: at a stop token
    (not returned), after ``max_new_tokens``, or at the end of the window.

    Args:
        model: maps ``{"token_ids": int [B, a + n]}`` to ``{"logits": [B, n, vocab]}``.
        prompts: lists of aux + text ids.
        max_new_tokens: most tokens generated per prompt.
        stop_token_ids: generation of an example ends at the first of these.

    Returns:
        A list of generated id lists.
    """
    check_max_new_tokens(max_new_tokens)
    prompts = check_prompts(model, prompts)
    a = model.config.num_aux_tokens
    aux, text, lengths = pad_prompts(prompts, a)
    width = min(text.shape[1] + max_new_tokens, model.config.max_text_length)
    buffer = np.full((len(prompts), a + width), vocab.PAD_ID, dtype=np.int32)
    buffer[:, :a], buffer[:, a:a + text.shape[1]] = aux, text
    ends = np.minimum(lengths + max_new_tokens, width)  # each example's own budget and window
    generated = [[] for _ in prompts]
    active = lengths < ends
    while active.any():
        logits = model({"token_ids": buffer}, training=False)["logits"]
        last = logits_at(ops.cast(logits, "float32"), lengths - 1)
        tokens = np.asarray(ops.convert_to_numpy(ops.argmax(last, axis=-1)))
        for row in np.flatnonzero(active):
            token = int(tokens[row])
            if token in stop_token_ids:
                active[row] = False
                continue
            buffer[row, a + lengths[row]] = token
            generated[row].append(token)
            lengths[row] += 1
            active[row] = lengths[row] < ends[row]
    return generated


def logits_at(logits, positions):
    """``logits[b, positions[b]]`` for each row ``b`` of ``logits`` [B, T, V]: [B, V].

    One gather of rows: Keras' ``take_along_axis`` on axis 1 transposes its indices as
    int64, which TensorFlow's oneDNN build reports on AVX-512 machines as an error line
    ("oneDNN supports DT_INT64 only on platforms with AVX-512").
    """
    batch, width = logits.shape[0], logits.shape[1]
    rows = np.arange(batch, dtype=np.int32) * width + np.asarray(positions, np.int32)
    return ops.take(ops.reshape(logits, (batch * width, -1)), rows, axis=0)
