"""The few primitives ``keras.ops`` lacks, written once per Keras backend.

Layers stay in ``keras.ops``; what they need beyond it lives here, each function with
one branch per backend and the backend's module imported inside it (so ``nemot`` runs
on JAX without TensorFlow installed, and on TensorFlow without JAX):

- :func:`fold_seed` and :func:`random_bits`: raw random bits from a stateless,
  counter-based generator, for :mod:`nemot.dropout`. Keras's random ops draw
  floats through JAX's threefry (``keras.random.dropout``: 43% of a GPT-2 training step
  on an H100) and expose no raw bits; here JAX on an accelerator uses its
  ``rbg`` generator (XLA's RngBitGenerator, Philox) and elsewhere threefry, and
  TensorFlow its stateless Philox.
- :func:`replica_context`, :func:`replica_index`, :func:`global_sum`: the
  ``tf.distribute`` replica running the code (each replica draws its slice of the global
  batch's dropout masks) and sums over replicas (the loss's global counts).
- :func:`has_fused_attention`, :func:`attention_length_multiple`: whether this device
  has a fused attention kernel (cuDNN flash attention on a GPU under JAX) and the
  length multiple it needs (64).
- :func:`recomputed`: a function whose activations the backward pass recomputes.
- :func:`concrete`: a tensor's value, or None while a function is being traced.
- :func:`dynamic_shapes`, :func:`partition`, :func:`stitch`: whether the code being
  built may give tensors data-dependent shapes (TensorFlow outside XLA), and
  ``tf.dynamic_partition`` / ``tf.dynamic_stitch`` for it (routing examples to blocks).
"""

import warnings

import keras
import numpy as np
from keras import ops

BACKENDS = ("tensorflow", "jax")


def name():
    """The Keras backend, with a clear error for one nemot has not been written for."""
    backend = keras.backend.backend()
    if backend not in BACKENDS:
        raise NotImplementedError(f"KERAS_BACKEND={backend!r}: nemot runs on {BACKENDS}")
    return backend


def _jax_platform():
    import jax

    return jax.default_backend()


def jax_bits_impl():
    """JAX's generator for dropout bits: ``rbg`` on an accelerator, where XLA's
    RngBitGenerator is a fused kernel, and ``threefry`` on the CPU, where it was 3x
    faster than RngBitGenerator here."""
    return "threefry" if _jax_platform() == "cpu" else "rbg"


def fold_seed(seed, salt):
    """A new seed [2] from ``seed`` [2] and an int ``salt`` (Python or scalar tensor).

    Different salts give independent streams (threefry's ``fold_in`` on JAX,
    ``stateless_fold_in`` on TensorFlow); the cost is one scalar hash.
    """
    if name() == "jax":
        import jax
        import jax.numpy as jnp

        key = jax.random.wrap_key_data(jnp.asarray(seed).astype(jnp.uint32))
        return jax.random.key_data(jax.random.fold_in(key, salt))
    import tensorflow as tf

    return tf.random.experimental.stateless_fold_in(tf.cast(seed, tf.int64), salt)


def random_bits(shape, seed, impl=None, offset=None):
    """uint32 random bits of ``shape`` from ``seed`` [2], a pure function of the seed.

    ``impl``: JAX only, ``"threefry"`` or ``"rbg"`` (default :func:`jax_bits_impl`).
    ``offset``: TensorFlow only, a scalar: the bits are the words of ``seed``'s stream
    from that one on, so that replicas each drawing their slice of a global batch draw
    together what one device draws for all of it. The stream is Philox's (TensorFlow's
    CPU and GPU kernels, and XLA): counter-based, word ``k`` from block ``k // 4``, so a
    slice starts at the counter advanced by ``offset // 4`` blocks.
    """
    if name() == "jax":
        import jax
        import jax.numpy as jnp

        key = jax.random.wrap_key_data(jnp.asarray(seed).astype(jnp.uint32))
        if (impl or jax_bits_impl()) == "rbg":
            # An rbg key is 4 words: two threefry children of the seed.
            words = jax.random.key_data(jax.random.split(key)).reshape(4)
            key = jax.random.wrap_key_data(words, impl="rbg")
        return jax.random.bits(key, tuple(shape), jnp.uint32)
    import tensorflow as tf

    seed = tf.cast(seed, tf.int64)
    if offset is None:
        return tf.random.stateless_uniform(shape, seed, minval=None, maxval=None,
                                           dtype=tf.uint32)
    key, counter = tf.raw_ops.StatelessRandomGetKeyCounter(seed=seed)
    offset = tf.cast(offset, tf.int64)
    rest = offset % 4
    words = tf.cast(tf.reduce_prod(tf.stack(list(shape))), tf.int64)
    # The 128-bit counter as two uint64 words, low first: add the blocks with the carry.
    low, high = tf.unstack(tf.bitcast(counter, tf.int64))
    moved = low + offset // 4
    unsigned = tf.int64.min  # an unsigned comparison as a signed one, the top bit flipped
    carry = tf.cast(tf.bitwise.bitwise_xor(moved, unsigned)
                    < tf.bitwise.bitwise_xor(low, unsigned), tf.int64)
    counter = tf.bitcast(tf.stack([moved, high + carry]), tf.uint64)
    bits = tf.raw_ops.StatelessRandomUniformFullIntV2(
        shape=tf.reshape(words + rest, [1]), key=key, counter=counter,
        alg=tf.random.Algorithm.AUTO_SELECT.value, dtype=tf.uint32)
    return tf.reshape(bits[rest:], shape)


def recomputed(fn):
    """``fn`` whose activations are recomputed in the backward pass instead of kept
    (``jax.checkpoint`` on JAX; elsewhere ``fn`` itself)."""
    if name() != "jax":
        return fn
    import jax

    return jax.checkpoint(fn)


def replica_context():
    """The ``tf.distribute`` replica context when there are several replicas, else None.

    JAX's ``keras.distribution`` runs one program on global arrays: its sums are global
    and random ops of different shards are different parts of one stream already.
    """
    if name() != "tensorflow":
        return None
    import tensorflow as tf

    context = tf.distribute.get_replica_context()
    if context is None or context.num_replicas_in_sync == 1:
        return None
    return context


def replica_index():
    """The index of the replica running this code when there are several, else None."""
    context = replica_context()
    return None if context is None else context.replica_id_in_sync_group


def global_sum(value):
    """Sum ``value`` over all replicas when called inside a replica context."""
    context = replica_context()
    if context is None:
        return value
    import tensorflow as tf

    return context.all_reduce(tf.distribute.ReduceOp.SUM, value)


def concrete(tensor):
    """``tensor`` as numpy, or None inside a traced function (symbolic values)."""
    try:
        # Converting a symbolic TF tensor also warns (numpy 2's copy keyword) before it
        # raises; the answer is None either way.
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            return np.asarray(ops.convert_to_numpy(tensor))
    except (TypeError, ValueError, NotImplementedError, AttributeError):
        return None


def dynamic_shapes():
    """Whether the code being run or traced may make tensors whose shapes depend on the
    data: TensorFlow, eager or in a ``tf.function`` that XLA does not compile. JAX and
    XLA need static shapes."""
    if name() != "tensorflow":
        return False
    import tensorflow as tf
    # No public API says whether a function is being traced for XLA
    # (``tf.function(jit_compile=True)`` enters this context while it traces).
    from tensorflow.python.ops.control_flow_util import GraphOrParentsInXlaContext

    return not GraphOrParentsInXlaContext(tf.compat.v1.get_default_graph())


def partition(values, index, count):
    """``values`` [batch, ...] split by ``index`` [batch] (int32 in ``[0, count)``) into
    ``count`` tensors, in batch order (``tf.dynamic_partition``; needs
    :func:`dynamic_shapes`)."""
    import tensorflow as tf

    return tf.dynamic_partition(values, index, count)


def stitch(positions, parts):
    """The inverse of :func:`partition`: ``parts[i]`` goes to rows ``positions[i]``, where
    ``positions`` is :func:`partition` of ``arange(batch)`` (``tf.dynamic_stitch``)."""
    import tensorflow as tf

    return tf.dynamic_stitch(positions, parts)


def has_fused_attention():
    """Whether ``keras.ops.dot_product_attention`` has a fused kernel here: cuDNN flash
    attention on JAX with a GPU. Elsewhere it computes what the unfused path computes,
    and on a CPU it measured 1.2x slower (``bench/results/speed_*.json``)."""
    return name() == "jax" and _jax_platform() == "gpu"


def attention_length_multiple():
    """Query and key lengths the fused attention kernel needs a multiple of: 64 for
    cuDNN flash attention (JAX on a GPU), else 1 (no padding)."""
    return 64 if has_fused_attention() else 1


def compile_function(fn, variables, jit_compile=True, static_argnums=()):
    """``fn`` compiled once per input signature, reading (and writing) ``variables``.

    TensorFlow: ``tf.function`` (XLA when ``jit_compile``). JAX: ``jax.jit`` of a pure
    version that takes the variables' values as arguments, so the weights are inputs
    of the compiled program (not constants baked into it, and later weights are
    seen), and assigns back the ones ``fn`` changed (a sampler's seed, say), as
    KerasHub's ``CausalLM.generate`` does. ``static_argnums``: arguments that are
    Python values fixing shapes (JAX retraces per value).
    """
    variables = list(variables)
    if name() == "tensorflow":
        import tensorflow as tf

        # No AutoGraph: ``fn`` runs under ``jax.jit`` too, so it has no Python control flow
        # over tensors to convert, and converting nemot's layers' source costs seconds of
        # the first call (the first greedy decoding of a tiny model, side by side on two cores:
        # 8.2 and 9.9 s with AutoGraph, 6.0 and 6.8 s without).
        return tf.function(fn, jit_compile=jit_compile, autograph=False)
    import jax

    def pure(values, *args):
        with keras.StatelessScope(state_mapping=list(zip(variables, values))) as scope:
            out = fn(*args)
        changed = {i: scope.get_current_value(v) for i, v in enumerate(variables)
                   if scope.get_current_value(v) is not None}
        return out, changed

    compiled = jax.jit(pure, static_argnums=tuple(i + 1 for i in static_argnums))

    def call(*args):
        out, changed = compiled([v.value for v in variables], *args)
        for i, value in changed.items():
            variables[i].assign(value)
        return out

    return call
