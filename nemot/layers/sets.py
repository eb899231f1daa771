"""The three sets of NeMoT (thesis Figure 3.1); the gate between them is
:class:`nemot.modulation.Gate`.

Every set takes a bool attention mask built by ``nemot.layers.masks``, the
``conditioning`` of its hosted modulations (:mod:`nemot.modulation.base`; none in the
thesis) and, for cached decoding, a cache [batch, layers, 2, max_length, heads,
head_dim] and the index where the new positions go; with a cache, ``call`` returns
``(output, cache)``, without one just the output.

Dropout: each set draws one seed per training call from its own ``SeedGenerator``
and gives every layer and dropout of it a salted copy (:mod:`nemot.dropout`);
the output set draws before routing, so no branch changes state.
"""

import math

import keras
from keras import ops

from nemot import backend
from nemot.config import as_config
from nemot import dropout as drop
from nemot.layers.masks import attention_mask as build_attention_mask
from nemot.layers.transformer import TransformerLayer
from nemot.modulation.stack import stack_modulations

# Conditioning each set can pass to its modulations: the vanilla and neuromodulatory
# sets run before the neuromodulatory output exists.
SET_CONDITIONING = {
    "vanilla": ("task_index",),
    "neuromodulatory": ("task_index",),
    "output": ("task_index", "context", "context_tokens"),
}


# NeMoTConfig.attention_implementation -> MultiHeadAttention's ``fused``.
ATTENTION_PATHS = {"auto": None, "fused": True, "unfused": False}


class _ConfiguredLayer(keras.layers.Layer):
    """A layer built from a ``NeMoTConfig`` and serialised as its dict."""

    def __init__(self, config, **kwargs):
        super().__init__(**kwargs)
        self.config = as_config(config)
        if self.config.remat_layers and backend.name() != "jax":
            raise ValueError(
                "model.remat_layers = true recomputes layers with jax.checkpoint: run with "
                "KERAS_BACKEND=jax, or set model.remat_layers = false (TensorFlow's "
                "tf.recompute_grad fails inside the output set's branches under XLA)")
        self.seed_generator = drop.seed_generator(self._has_dropout())
        # Whether the stacks run as one loop over their layers (:meth:`_scanned`).
        self.scan_layers = self.config.scan_layers

    def _has_dropout(self):
        """Whether the set draws dropout seeds (its own generator, see the module doc)."""
        return bool(self.config.dropout or self.config.attention_dropout)

    def _regularizer(self):
        return keras.regularizers.L2(self.config.kernel_l2) if self.config.kernel_l2 else None

    def _stack(self, stack, count, normalize_first, activation, attention_dropout,
               values_use_key_weights=None):
        """``count`` transformer layers hosting the config's modulations for ``stack``."""
        cfg = self.config
        if values_use_key_weights is None:
            values_use_key_weights = cfg.compat_values_use_key_weights
        per_layer, self.shared_modulations = stack_modulations(
            cfg.modulation, stack, count, cfg.num_output_blocks, cfg.d_model,
            available=SET_CONDITIONING[stack], dtype=self.dtype_policy)
        layers = []
        for i, (modulations, replacements) in enumerate(per_layer):
            layer = TransformerLayer(
                cfg.num_heads, cfg.d_ff, dropout=cfg.dropout,
                attention_dropout=attention_dropout,
                layer_norm_epsilon=cfg.layer_norm_epsilon, normalize_first=normalize_first,
                activation=activation, values_use_key_weights=values_use_key_weights,
                kernel_regularizer=self._regularizer(), modulations=modulations,
                dense_replacements=replacements,
                fused_attention=ATTENTION_PATHS[cfg.attention_implementation],
                name=f"transformer_layer_{i}",
                dtype=self.dtype_policy,
            )
            layer.build((None, None, cfg.d_model))
            layers.append(layer)
        return layers

    def _run_stack(self, layers, x, attention_mask, cache, cache_update_index, training,
                   conditioning=None, dropout_seed=None):
        """The layers in order; layer i's dropout seed is ``dropout_seed`` salted with i.
        With the config's ``remat_layers`` (and no cache), each layer's forward pass is
        recomputed in the backward pass (``jax.checkpoint``; its dropout seed is an input,
        so the recomputation draws the same masks)."""
        recompute = cache is None and self.config.remat_layers
        if cache is None and self._scannable(layers):
            return self._scanned(layers, x, attention_mask, training, conditioning,
                                 dropout_seed, recompute), None
        new_caches = []
        for i, layer in enumerate(layers):
            def run(x, layer=layer, layer_cache=None if cache is None else cache[:, i],
                    seed=drop.salted(dropout_seed, i)):
                return layer(x, attention_mask, cache=layer_cache,
                             cache_update_index=cache_update_index, training=training,
                             conditioning=conditioning, dropout_seed=seed)

            x, layer_cache = (backend.recomputed(run) if recompute else run)(x)
            new_caches.append(layer_cache)
        return x, (None if cache is None else ops.stack(new_caches, axis=1))

    def _scannable(self, layers):
        """Whether ``layers`` run as one loop (:meth:`_scanned`): on JAX, with
        ``scan_layers``, two layers or more of the same configuration and variables."""
        if not self.scan_layers or backend.name() != "jax" or len(layers) < 2:
            return False
        configs = {repr(_code_of(layer)) for layer in layers}
        layouts = {tuple(tuple((tuple(v.shape), v.dtype) for v in variables)
                         for variables in (layer.trainable_variables,
                                           layer.non_trainable_variables))
                   for layer in layers}
        return len(configs) == 1 and len(layouts) == 1

    def _scanned(self, layers, x, attention_mask, training, conditioning, dropout_seed,
                 recompute):
        """The layers as one ``ops.scan`` over their stacked weights: step i runs the first
        layer's code with layer i's weights (``stateless_call``) and seed, so XLA compiles
        one layer instead of each; the unrolled layers' outputs and gradients to
        round-off. The weights stay per layer: they are stacked here, in the step."""
        trainable = stacked_values([layer.trainable_variables for layer in layers])
        non_trainable = stacked_values([layer.non_trainable_variables for layer in layers])
        seeds = None if dropout_seed is None else ops.stack(
            [drop.salted(dropout_seed, i) for i in range(len(layers))])

        def run(x, trainable, non_trainable, seed):
            (y, _), _ = layers[0].stateless_call(
                trainable, non_trainable, x, attention_mask, training=training,
                conditioning=conditioning, dropout_seed=seed)
            return y

        run = backend.recomputed(run) if recompute else run

        def step(x, layer):
            return run(x, *layer), None

        x, _ = ops.scan(step, x, (trainable, non_trainable, seeds))
        return x

    def compute_output_spec(self, x, *args, cache=None, **kwargs):
        """What a call returns, for Keras's symbolic calls (a functional graph): the set's
        layers are built in ``build``, so nothing is traced to know it (a tiny NeMoT's
        graph: half its construction time)."""
        return self._output_spec(x.shape, cache)

    def _output_spec(self, shape, cache):
        out = keras.KerasTensor(shape, dtype=self.compute_dtype)
        return out if cache is None else (out, cache)

    def get_config(self):
        config = super().get_config()
        config["config"] = self.config.to_dict()
        return config


def stacked_values(per_item):
    """The values of the items' variables, stacked variable by variable: ``per_item`` is
    a list of equal-layout variable lists (layers, blocks)."""
    return [ops.stack([v.value for v in same]) for same in zip(*per_item)]


def _code_of(layer):
    """What decides a transformer layer's computation besides its weights: its config and
    its modulations' classes and configs (names aside)."""
    def config(item):
        return type(item).__name__, sorted((k, repr(v)) for k, v in item.get_config().items()
                                           if k != "name")

    hosted = layer.parallel + layer.output_modulations + [layer.activation_modulation]
    return (config(layer), [None if m is None else config(m) for m in hosted],
            sorted(layer.dense_replacements))


def sinusoidal_encoding(positions, d_model):
    """Fixed position encoding of thesis eq. 3.1, sin and cos interleaved.

    PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(p / 10000^(2i/d)).
    """
    positions = ops.cast(ops.expand_dims(positions, -1), "float32")
    even = ops.arange(0, d_model, 2, dtype="float32")
    angles = positions / ops.power(10000.0, even / d_model)
    stacked = ops.stack([ops.sin(angles), ops.cos(angles)], axis=-1)
    return ops.reshape(stacked, (-1, d_model))


@keras.saving.register_keras_serializable(package="nemot")
class VanillaSet(_ConfiguredLayer):
    """The vanilla set (thesis eq. 3.11): GPT-2's embeddings, Y pre-LN layers, final LayerNorm.

    Input is text ids only (no auxiliary tokens); positions 0..n-1 of the text.
    Called on ids alone it uses the ``<dec>`` rule (causal, padding masked).

    Example:
        >>> vanilla = VanillaSet(NeMoTConfig.preset("tiny"))
        >>> h = vanilla(ops.array([[464, 3290, 50304]]))   # [1, 3, d_model]
    """

    def _has_dropout(self):
        return bool(self.config.dropout or self.config.vanilla_attention_dropout)

    def build(self, input_shape=None):
        cfg = self.config
        self.token_embedding = keras.layers.Embedding(cfg.vocab_size, cfg.d_model,
                                                      name="token_embedding",
                                                      dtype=self.dtype_policy)
        self.token_embedding.build((None, None))
        if cfg.position_encoding == "learned":
            self.position_embedding = keras.layers.Embedding(
                cfg.max_position_embeddings, cfg.d_model, name="position_embedding",
                dtype=self.dtype_policy)
            self.position_embedding.build((None,))
        # GPT-2 itself always had W_V: the original code's missing value
        # projection was in its own NM and output layers only (thesis counts).
        self.transformer_layers = self._stack("vanilla", cfg.num_vanilla_layers, True,
                                              "gelu_tanh", cfg.vanilla_attention_dropout,
                                              values_use_key_weights=False)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=cfg.layer_norm_epsilon, name="layer_norm", dtype=self.dtype_policy)
        self.layer_norm.build((None, None, cfg.d_model))

    def embed(self, text_ids, start_position=0):
        """Word plus position embeddings of text ids starting at ``start_position``."""
        positions = start_position + ops.arange(ops.shape(text_ids)[1], dtype="int32")
        if self.config.position_encoding == "learned":
            position_vectors = self.position_embedding(positions)
        else:
            position_vectors = sinusoidal_encoding(positions, self.config.d_model)
        x = self.token_embedding(text_ids)
        return x + ops.cast(position_vectors, x.dtype)[None]

    def call(self, text_ids, attention_mask=None, cache=None, cache_update_index=0,
             training=None, embeddings_transform=None, conditioning=None):
        """``embeddings_transform``: optional callable ``x -> x`` on the embeddings (after
        their dropout, before the first layer), e.g. NeMoT's reading strategies."""
        if attention_mask is None:
            attention_mask = build_attention_mask(text_ids, mode="dec", num_aux=0)
        seed = drop.draw_seed(self.seed_generator, training)
        layers = self.transformer_layers
        x = drop.dropout(self.embed(text_ids, cache_update_index), self.config.dropout,
                         drop.salted(seed, len(layers)))
        if embeddings_transform is not None:
            x = embeddings_transform(x)
        x, cache = self._run_stack(layers, x, attention_mask, cache, cache_update_index,
                                   training, conditioning, seed)
        x = self.layer_norm(x)
        return x if cache is None else (x, cache)

    def compute_output_spec(self, text_ids, *args, cache=None, **kwargs):
        return self._output_spec((*text_ids.shape, self.config.d_model), cache)


@keras.saving.register_keras_serializable(package="nemot")
class NeuromodulatorySet(_ConfiguredLayer):
    """The neuromodulatory set (eq. 3.12): M pre-LN layers over [aux embeddings ; vanilla output].

    No final LayerNorm. Its output becomes the gates in :class:`nemot.modulation.Gate`
    (dropout, then sigmoid: thesis eqs. 3.12 and 3.14).
    """

    def build(self, input_shape=None):
        cfg = self.config
        activation = "gelu" if cfg.exact_gelu else "gelu_tanh"
        self.transformer_layers = self._stack("neuromodulatory", cfg.num_nm_layers, True,
                                              activation, cfg.attention_dropout)

    def call(self, x, attention_mask, cache=None, cache_update_index=0, training=None,
             conditioning=None):
        x, cache = self._run_stack(self.transformer_layers, x, attention_mask, cache,
                                   cache_update_index, training, conditioning,
                                   drop.draw_seed(self.seed_generator, training))
        return x if cache is None else (x, cache)


@keras.saving.register_keras_serializable(package="nemot")
class OutputBlock(_ConfiguredLayer):
    """One output block (eq. 3.13): Z post-LN layers, dropout, final LayerNorm (exact GELU).

    Its dropout seed comes from the output set (``dropout_seed=``), drawn outside the
    routing branch; the block owns no generator.
    """

    def _has_dropout(self):
        return False

    def build(self, input_shape=None):
        cfg = self.config
        activation = "gelu" if cfg.exact_gelu else "gelu_tanh"
        self.transformer_layers = self._stack("output", cfg.num_output_layers, False,
                                              activation, cfg.attention_dropout)
        self.layer_norm = keras.layers.LayerNormalization(
            epsilon=cfg.layer_norm_epsilon, name="layer_norm", dtype=self.dtype_policy)
        self.layer_norm.build((None, None, cfg.d_model))

    def call(self, x, attention_mask, cache=None, cache_update_index=0, training=None,
             conditioning=None, dropout_seed=None):
        layers = self.transformer_layers
        if training and self.config.dropout and dropout_seed is None:
            raise ValueError(f"{self.name}: an output block trains with the dropout seed of "
                             "its output set (dropout_seed=)")
        seed = dropout_seed if training else None
        x, cache = self._run_stack(layers, x, attention_mask, cache, cache_update_index,
                                   training, conditioning, seed)
        x = self.layer_norm(drop.dropout(x, self.config.dropout, drop.salted(seed, len(layers))))
        return x if cache is None else (x, cache)


@keras.saving.register_keras_serializable(package="nemot")
class OutputSet(_ConfiguredLayer):
    """A parallel output blocks, one per task token (thesis §3.4.1, eq. 3.13).

    Routing is per example by the task token, and a block costs nothing for the
    examples that do not select it:

    - TensorFlow outside XLA (eager, or ``fit`` on a CPU, where Keras does not
      jit-compile): the batch is partitioned by block (``tf.dynamic_partition``) and each
      block runs on its own examples only, an empty part for a block no example selects;
      the parts are stitched back in batch order.
    - JAX, and TensorFlow under XLA (static shapes): a block runs on the whole batch
      under ``ops.cond`` when some example selects it, and each example keeps its own
      block's output. On JAX (no cache) the blocks are one ``ops.scan`` over their
      stacked weights, so XLA compiles one block's code instead of each block's
      (:meth:`_call_stacked`); decoding with a cache and TensorFlow under XLA keep a
      branch per block.

    Both give each example its block's output (and zeros to an example whose task token
    names no block) and the unused blocks a zero gradient (and, through
    :mod:`nemot.models.routing`, no optimizer update). The partition traces faster than
    a branch per block (the tiny preset's first ``fit``: 10 s against 13 s of CPU) and a
    mixed batch runs each example through one block, not all of the batch's blocks. A
    block's dropout mask is drawn for the rows it runs, so the two paths draw different
    masks. The dropout seed is drawn before the blocks run, which then change no state
    (JAX traces each branch as a pure function). With ``compat_route_by_first_example``
    the first example's block is used for the whole batch, as the original code did.
    """

    # On JAX, the blocks as one loop over their stacked weights (:meth:`_call_stacked`);
    # False: a branch per block, as TensorFlow under XLA runs them (benchmarks compare the two).
    stack_blocks = True

    def build(self, input_shape=None):
        self.blocks = {}
        for name in self.config.output_blocks:
            block = OutputBlock(self.config, name=f"block_{name}", dtype=self.dtype_policy)
            block.build(None)
            self.blocks[name] = block
        # A hosted modulation that drops out (PALs' attention) needs seeds even when the
        # set has no dropout of its own; a layer drawing its own would do so in a branch.
        if self.seed_generator is None and any(layer.seed_generator is not None
                                               for block in self.blocks.values()
                                               for layer in block.transformer_layers):
            self.seed_generator = drop.seed_generator(True)

    def selection(self, task_ids):
        """bool [batch, blocks]: which block each example runs through."""
        if self.config.compat_route_by_first_example:
            task_ids = ops.broadcast_to(task_ids[:1], ops.shape(task_ids))
        table = ops.convert_to_tensor(self.config.task_token_ids, "int32")
        return ops.equal(ops.cast(task_ids, "int32")[:, None], table[None, :])

    def call(self, x, task_ids, attention_mask, cache=None, cache_update_index=0,
             training=None, conditioning=None):
        selection = self.selection(task_ids)
        seed = drop.draw_seed(self.seed_generator, training)
        if cache is None and backend.dynamic_shapes():
            return self._call_partitioned(x, selection, attention_mask, training,
                                          conditioning, seed)
        if cache is None and self._stackable():
            return self._call_stacked(x, selection, attention_mask, training, conditioning,
                                      seed)
        output = ops.zeros_like(x)
        new_caches = []
        for i, name in enumerate(self.config.output_blocks):
            block = self.blocks[name]
            selected = selection[:, i]
            block_cache = None if cache is None else cache[:, i]
            block_seed = drop.salted(seed, i)

            def run(block=block, block_cache=block_cache, block_seed=block_seed):
                if block_cache is None:
                    return block(x, attention_mask, training=training,
                                 conditioning=conditioning, dropout_seed=block_seed)
                return block(x, attention_mask, cache=block_cache,
                             cache_update_index=cache_update_index, training=training,
                             conditioning=conditioning)

            def skip(block_cache=block_cache):
                return ops.zeros_like(x) if block_cache is None else (ops.zeros_like(x), block_cache)

            result = ops.cond(ops.any(selected), run, skip)
            y = result if cache is None else result[0]
            if cache is not None:
                new_caches.append(result[1])
            output = ops.where(selected[:, None, None], y, output)
        return output if cache is None else (output, ops.stack(new_caches, axis=1))

    def _stackable(self):
        """Whether the blocks run as one loop over their stacked weights: on JAX, with two
        blocks or more. The blocks are built from one config, so they have the same
        variables (checked) and the same code."""
        if not self.stack_blocks or backend.name() != "jax" or len(self.blocks) < 2:
            return False
        layouts = {tuple((tuple(v.shape), v.dtype) for v in block.variables)
                   for block in self.blocks.values()}
        return len(layouts) == 1

    def _call_stacked(self, x, selection, attention_mask, training, conditioning, seed):
        """The branch per block as one ``ops.scan`` over the blocks' stacked weights: block
        i's step runs the first block's code with block i's weights
        (``stateless_call``), under ``ops.cond`` when some example selects it, with the
        seed of block i. The outputs and gradients of a branch per block (to round-off),
        and XLA compiles one block instead of each.

        The block's forward pass is recomputed in the backward pass
        (:func:`nemot.backend.recomputed`): a loop keeps each step's activations for the
        backward pass, zeros for a block no example selects, and without recomputing
        the training step ran 15% slower. Thesis sizes on JAX's CPU (``python -m bench
        compile``, alternating): compile 34 s instead of 43 s, the step as before."""
        blocks = [self.blocks[name] for name in self.config.output_blocks]

        trainable = stacked_values([block.trainable_variables for block in blocks])
        non_trainable = stacked_values([block.non_trainable_variables for block in blocks])
        seeds = None if seed is None else ops.stack([drop.salted(seed, i)
                                                     for i in range(len(blocks))])

        @backend.recomputed
        def run_block(trainable, non_trainable, block_seed):
            y, _ = blocks[0].stateless_call(trainable, non_trainable, x, attention_mask,
                                            training=training, conditioning=conditioning,
                                            dropout_seed=block_seed)
            return y

        def step(output, block):
            trainable, non_trainable, selected, block_seed = block

            def run():
                return run_block(trainable, non_trainable, block_seed)

            y = ops.cond(ops.any(selected), run, lambda: ops.zeros_like(x))
            return ops.where(selected[:, None, None], y, output), None

        output, _ = ops.scan(step, ops.zeros_like(x),
                             (trainable, non_trainable, ops.transpose(selection), seeds))
        return output

    def _call_partitioned(self, x, selection, attention_mask, training, conditioning, seed):
        """Each block on the examples that select it; part ``count`` (no block) is zeros."""
        count = len(self.config.output_blocks)
        index = ops.where(ops.any(selection, axis=1),
                          ops.argmax(ops.cast(selection, "int32"), axis=1), count)
        index = ops.cast(index, "int32")

        def parts(value):
            return None if value is None else backend.partition(value, index, count + 1)

        positions = parts(ops.arange(ops.shape(x)[0], dtype="int32"))
        xs, masks = parts(x), parts(attention_mask)
        conditions = {key: parts(value) for key, value in (conditioning or {}).items()}
        outputs = []
        for i, name in enumerate(self.config.output_blocks):
            part_conditioning = None if conditioning is None else {
                key: None if value is None else value[i] for key, value in conditions.items()}
            outputs.append(self.blocks[name](xs[i], masks[i], training=training,
                                             conditioning=part_conditioning,
                                             dropout_seed=drop.salted(seed, i)))
        outputs.append(ops.zeros_like(xs[count]))
        return ops.reshape(backend.stitch(positions, outputs), ops.shape(x))
