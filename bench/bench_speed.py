"""The three speed levers, each against the path it replaces, side by side on the
current Keras backend (``KERAS_BACKEND=jax python -m bench speed`` for JAX):

- attention: fused (``keras.ops.dot_product_attention``) vs unfused
  (:class:`nemot.layers.MultiHeadAttention` with ``fused=False``), forward + backward;
- loss: the task and lm terms' cross-entropies of one head's 50,313-wide logits as
  :mod:`nemot.models.losses` computes them (JAX: the lean formula per term; TensorFlow:
  one softmax for both, with its own gradient) vs Keras's float32 sparse softmax
  cross-entropy per term (the earlier formula), forward + backward;
- dropout: :func:`nemot.dropout.dropout` vs ``keras.random.dropout`` on an
  attention-probability-sized tensor;
- vanilla head (TensorFlow without XLA, where shapes may follow the data): the vanilla-set
  term (L3) with the head applied at the task targets' positions only, as
  :meth:`nemot.NeMoTCausalLM.loss_inputs` applies it in the train step, vs the head at every
  position, forward + backward to the hidden states.

Each pair is compiled the ways training compiles it (on TensorFlow ``tf.function``
without XLA, the trainer's default, and with ``jit_compile=True``, its GPU setting; on
JAX ``jax.jit``), warmed up, then timed in interleaved rounds; medians are reported with
their ratio. On a CPU these ratios say
which way each lever goes here; the GPU figures are ``python -m bench gpu``'s.
"""

import statistics
import time

import keras
import numpy as np
from keras import ops

from nemot import backend
from nemot import dropout as drop
from nemot import vocab
from nemot.layers import MultiHeadAttention
from nemot.models.losses import token_cross_entropies

ROUNDS = 7
ATTENTION = dict(batch=8, length=256, d_model=256, heads=4)
LOSS = dict(batch=4, length=128)
# A fine-tuning batch: answers of 4 tokens (and </s>) after prompts of 123.
VANILLA_HEAD = dict(batch=4, length=128, d_model=256, answer=5)
DROPOUT_SHAPE = (8, 4, 256, 256)


XLA = [False]  # TensorFlow: tf.function(jit_compile=XLA[0]); JAX always compiles with XLA


def compiled_grad(loss_fn, argnum=0):
    """``(x, *rest) -> d loss / d x`` compiled for the backend."""
    if backend.name() == "jax":
        import jax

        return jax.jit(jax.grad(loss_fn, argnums=argnum))
    import tensorflow as tf

    @tf.function(jit_compile=XLA[0], autograph=False)
    def grad(*args):
        args = list(args)
        with tf.GradientTape() as tape:
            tape.watch(args[argnum])
            value = loss_fn(*args)
        return tape.gradient(value, args[argnum])

    return grad


def compiled(fn):
    if backend.name() == "jax":
        import jax

        return jax.jit(fn)
    import tensorflow as tf

    return tf.function(fn, jit_compile=XLA[0], autograph=False)


def block(value):
    np.asarray(ops.convert_to_numpy(value))


def attention_pair():
    a = ATTENTION
    rng = np.random.default_rng(0)
    x = ops.convert_to_tensor(rng.normal(size=(a["batch"], a["length"], a["d_model"]))
                              .astype("float32"))
    causal = np.tril(np.ones((a["length"], a["length"]), bool))
    mask = ops.convert_to_tensor(np.broadcast_to(causal, (a["batch"],) + causal.shape))
    fns = {}
    for fused in (True, False):
        layer = MultiHeadAttention(a["heads"], a["d_model"] // a["heads"], fused=fused)
        layer.build((None, None, a["d_model"]))

        def loss(x, layer=layer):
            return ops.sum(layer(x, mask)[0] ** 2)

        grad = compiled_grad(loss)
        fns["fused" if fused else "unfused"] = lambda grad=grad: block(grad(x))
    return fns


def loss_new_name():
    """What the loss runs on this backend (:func:`nemot.models.losses.token_cross_entropies`)."""
    return "lean" if backend.name() == "jax" else "softmax_once"


def loss_pair():
    """The task and lm terms' two cross-entropies of the main head's logits, forward +
    backward: what the loss runs against Keras's sparse softmax cross-entropy per term."""
    rng = np.random.default_rng(1)
    shape = (LOSS["batch"], LOSS["length"])
    logits = ops.convert_to_tensor(rng.normal(size=shape + (vocab.VOCAB_SIZE,))
                                   .astype("float32"))
    targets = [ops.convert_to_tensor(rng.integers(0, vocab.VOCAB_SIZE, shape).astype("int32"))
               for _ in range(2)]

    def ours(logits, task, lm):
        return sum(ops.mean(ce) for ce in token_cross_entropies([task, lm], logits))

    def full(logits, task, lm):
        return sum(ops.mean(keras.losses.sparse_categorical_crossentropy(
            t, ops.cast(logits, "float32"), from_logits=True)) for t in (task, lm))

    fns = {}
    for name, fn in ((loss_new_name(), ours), ("full", full)):
        grad = compiled_grad(fn)
        fns[name] = lambda grad=grad: block(grad(logits, *targets))
    return fns


def vanilla_head_pair():
    """The vanilla-set term of a fine-tuning batch, forward + backward to the hidden
    states: the head at the task targets' positions
    (:meth:`nemot.NeMoTCausalLM.loss_inputs`) against the head at every position."""
    from types import SimpleNamespace

    from nemot.models.heads import VocabularyHead
    from nemot.models.losses import NeMoTLoss
    from nemot.models.nemot_causal_lm import NeMoTCausalLM

    batch, length, d, answer = (VANILLA_HEAD[k] for k in ("batch", "length", "d_model",
                                                          "answer"))
    rng = np.random.default_rng(2)
    hidden = ops.convert_to_tensor(rng.normal(size=(batch, length, d)).astype("float32"))
    targets = np.full((batch, length), vocab.IGNORE_ID, "int32")
    targets[:, -answer:] = rng.integers(0, vocab.VOCAB_SIZE, (batch, answer))
    y = {"task_targets": ops.convert_to_tensor(targets)}
    head = VocabularyHead(vocab.VOCAB_SIZE)
    head.build((None, d))
    loss = NeMoTLoss(task_weight=0, lm_weight=0)
    model = SimpleNamespace(vanilla_head=head)

    def at_targets(hidden):
        read_y, y_pred = NeMoTCausalLM.loss_inputs(model, y, {"vanilla_hidden_states": hidden})
        return loss(read_y, y_pred)

    def every(hidden):
        return loss(y, {"vanilla_logits": head(hidden)})

    fns = {}
    for name, fn in (("at_targets", at_targets), ("every_position", every)):
        grad = compiled_grad(fn)
        fns[name] = lambda grad=grad: block(grad(hidden))
    return fns


def dropout_pair():
    x = ops.ones(DROPOUT_SHAPE)
    generator = keras.random.SeedGenerator(1)
    seed = drop.draw_seed(generator, training=True)
    cheap = compiled(lambda x, s: drop.dropout(x, 0.1, s))
    if backend.name() == "jax":  # a traced seed: JAX's jit cannot advance a generator
        default = compiled(lambda x, s: keras.random.dropout(x, 0.1, seed=s))
    else:  # Keras's TensorFlow dropout takes its generator, as keras.layers.Dropout does
        default = compiled(lambda x, s: keras.random.dropout(x, 0.1, seed=generator))
    return {"cheap": lambda: block(cheap(x, seed)), "default": lambda: block(default(x, seed))}


def measure(fns):
    for fn in fns.values():  # compile and warm up
        fn()
        fn()
    times = {name: [] for name in fns}
    for _ in range(ROUNDS):
        for name, fn in fns.items():
            start = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in times.items()}


def result_name(result):
    return f"speed_{result['backend']}"


def run():
    setups = [("jax.jit", True)] if backend.name() == "jax" else [
        ("tf.function", False), ("tf.function(jit_compile=True)", True)]
    result = {"backend": backend.name(), "device": "cpu", "rounds": ROUNDS,
              "setup": {"attention": ATTENTION, "loss": {**LOSS, "vocab": vocab.VOCAB_SIZE},
                        "dropout_shape": DROPOUT_SHAPE, "vanilla_head": VANILLA_HEAD}}
    for label, xla in setups:
        XLA[0] = xla
        pairs = {
            "attention_fwd_bwd": (attention_pair(), "fused", "unfused"),
            "loss_fwd_bwd": (loss_pair(), loss_new_name(), "full"),
            "dropout": (dropout_pair(), "cheap", "default"),
        }
        if backend.dynamic_shapes() and not xla:
            pairs["vanilla_head_fwd_bwd"] = (vanilla_head_pair(), "at_targets",
                                             "every_position")
        rows = result[label] = {}
        for name, (fns, new, old) in pairs.items():
            median = measure(fns)
            rows[name] = {"median_seconds": {k: round(v, 5) for k, v in median.items()},
                          f"ratio_{new}_vs_{old}": round(median[new] / median[old], 3)}
    return result
