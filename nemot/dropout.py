"""Dropout with cheap masks and explicit seeds.

Why not ``keras.layers.Dropout``:

- **Cost.** Keras draws a float per element through the backend's generic generator
  (JAX: threefry); on an H100 that was 43% of a GPT-2 training step. Here one 32-bit
  word of the backend's fastest counter-based generator (:func:`nemot.backend.random_bits`)
  gives two 16-bit draws, compared as integers.
- **Seeds outside branches.** A Keras ``Dropout`` advances its own ``SeedGenerator``
  inside its call; inside a branch of ``ops.cond`` (the output set's routing) JAX
  cannot keep that state change (``UnexpectedTracerError``). Here a stack of layers
  draws one seed per call, outside any branch (:func:`draw_seed`), and each dropout
  of the stack derives its own seed from it with a fixed salt
  (:func:`nemot.backend.fold_seed`). The masks are a pure function of the
  ``SeedGenerator`` states, which the training checkpoints hold, so a resumed run
  draws the same masks.
- **Replicas change nothing.** A mask is drawn for the global batch, whatever draws it:
  one device, JAX's ``keras.distribution`` (one program on global arrays), or each
  ``tf.distribute`` replica drawing its own rows of it (:func:`dropout_mask`), so every
  strategy trains to the weights of one device with dropout on.

Keep rule: an element is kept when its 16-bit draw is below ``T = round(keep * 2**16)``
and scaled by ``2**16 / T``, so the output's expectation is exactly the input and the
keep rate differs from ``1 - rate`` by at most ``2**-17`` (statistically the same
dropout; ``tests/test_dropout.py`` checks the rates and independence).
"""

import keras
from keras import ops

from nemot import backend

DRAW_BITS = 16
DRAW_RANGE = 1 << DRAW_BITS


def keep_threshold(rate):
    """``T``: a draw in ``[0, 2**16)`` below it is kept."""
    return int(round((1.0 - rate) * DRAW_RANGE))


def dropout_mask(shape, rate, seed):
    """bool mask of ``shape`` (last axis static), True with probability ``T / 2**16``.

    The first axis is the batch. Under ``tf.distribute`` each replica holds an equal slice
    of the global batch (``MirroredStrategy`` splits it so when its size is a multiple of
    the replicas, as nemot's training requires) and draws the rows of the global batch's
    mask that are its own: the words of the stream after those of the replicas before it.
    """
    shape = tuple(shape)
    last = shape[-1]
    half = (last + 1) // 2
    words = shape[:-1] + (half,)
    replica = backend.replica_index()
    offset = None if replica is None else ops.multiply(
        ops.cast(replica, "int64"), ops.cast(ops.prod(ops.stack(list(words))), "int64"))
    bits = backend.random_bits(words, seed, offset=offset)
    threshold = keep_threshold(rate)
    # Low and high halves of each word side by side (compared as uint32; one pass
    # under XLA, few kernels without it).
    keep = ops.stack([ops.less(ops.bitwise_and(bits, DRAW_RANGE - 1), threshold),
                      ops.less(ops.right_shift(bits, DRAW_BITS), threshold)], axis=-1)
    keep = ops.reshape(keep, shape[:-1] + (2 * half,))
    return keep[..., :last] if 2 * half != last else keep


def dropout(x, rate, seed):
    """Inverted dropout of ``x``; ``seed`` None (inference) or ``rate`` 0 returns ``x``."""
    if seed is None or not rate:
        return x
    threshold = keep_threshold(rate)
    keep = dropout_mask(ops.shape(x), rate, seed)
    return ops.where(keep, x * ops.cast(DRAW_RANGE / threshold, x.dtype), ops.zeros_like(x))


def seed_generator(active):
    """The ``SeedGenerator`` of a layer that owns dropouts (None when it has none).

    Assign it to an attribute of the layer: Keras then tracks its state as a
    non-trainable variable, which training checkpoints save.
    """
    return keras.random.SeedGenerator() if active else None


def draw_seed(generator, training):
    """The seed of one call of the layer owning ``generator``: None outside training.

    Under ``tf.distribute`` the replicas share the mirrored generator state, so all draw
    the same seed, and each its own rows of the global batch's mask
    (:func:`dropout_mask`).
    """
    if not training or generator is None:
        return None
    return generator.next()


def salted(seed, salt):
    """Sub-layer ``salt``'s own seed (None stays None)."""
    return None if seed is None else backend.fold_seed(seed, salt)
