"""The paper's models (*Context Dependent Modulation of Activation Function*, section 3): vanilla and modulated CNN, DenseNet-40 and
its lite version for CIFAR-10; the LSTM classifiers and their controls C1-C3.

Every model returns logits (no softmax); :func:`build` makes one from a
:class:`ModelConfig`.

Parameter counts (``nemot modact params``): the CNN has 1,250,858 parameters and its
four modulators add 28 + 289 + 289 + 577 = 1,183 (``k_h k_w C_in + 1`` each); DenseNet-40
has 1,037,818 (k = 12; 1,019,722 trainable) and 737,650 (k = 10; 722,362 trainable)
against the paper's 1.00 M / 0.71 M, and its 36 modulators add 73,260 and 61,920 (the
paper: +0.07 M, +0.06 M). For the LSTMs see :func:`recurrent_parameters`.
"""

import dataclasses

import keras
from keras import layers

from nemot.modulation.activation import ModulatedConv2D, ModulatedLSTMCell
from nemot.ranges import Count, DropoutRate, NonNegativeInt

ARCHITECTURES = ("cnn", "densenet", "lstm")
# The LSTM variants of paper Figure 6: "modulated" (node-wise modulation gate),
# "lstm" (a Keras LSTM: C1 with hidden 5N/4, C2 with hidden N), "extra_input_gate" (C3).
CELLS = ("modulated", "lstm", "extra_input_gate")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """One model of the paper; the fields an architecture does not use are ignored.

    Args:
        architecture: ``"cnn"``, ``"densenet"`` or ``"lstm"``.
        modulated: CNN and DenseNet: add the modulators.
        tau: the modulator activation (CNN, DenseNet: sigmoid; LSTM: sigmoid for
            NAMES, tanhshrink for SST-2).
        depth, growth_rate: DenseNet (40 and 12; lite: 10).
        dropout: DenseNet: after every convolution (0.5); LSTM: on the last hidden
            state (NAMES 0.2, SST-2 0).
        cell: LSTM: one of :data:`CELLS`.
        hidden: LSTM hidden size.
        embedding_dim: LSTM input embedding size.
        mask_padding: LSTM: skip the padding ids (0), so the last hidden state is the
            one at the last real token; False runs the cell over the padding too.
        vocab_size, num_classes, input_shape: filled from the data by the experiment.
    """

    architecture: str = "cnn"
    modulated: bool = False
    tau: str = "sigmoid"
    depth: Count = 40
    growth_rate: Count = 12
    dropout: DropoutRate = 0.0
    cell: str = "lstm"
    hidden: Count = 32
    embedding_dim: Count = 128
    mask_padding: bool = True
    vocab_size: NonNegativeInt = 0
    num_classes: Count = 10
    input_shape: tuple = (32, 32, 3)

    def __post_init__(self):
        if self.architecture not in ARCHITECTURES:
            raise ValueError(f"architecture={self.architecture!r}: expected one of "
                             f"{ARCHITECTURES}")
        if self.cell not in CELLS:
            raise ValueError(f"cell={self.cell!r}: expected one of {CELLS}")
        if self.architecture == "densenet" and (self.depth - 4) % 3:
            raise ValueError(f"depth={self.depth}: a DenseNet needs depth = 3 n + 4")


def _conv(filters, kernel_size, modulated, tau, activation=None, **kwargs):
    if modulated:
        return ModulatedConv2D(filters, kernel_size, activation=activation, tau=tau, **kwargs)
    return layers.Conv2D(filters, kernel_size, activation=activation, **kwargs)


def cifar10_cnn(config):
    """The Keras ``cifar10_cnn`` example's layout (paper section 3.1): [conv32 3x3 same,
    conv32 3x3 valid, max-pool, dropout .25], the same with 64 filters, dense 512 with
    ReLU and dropout .5, 10 logits. Modulated: each convolution gets a modulator before
    its ReLU (paper Figure 1)."""
    x = inputs = keras.Input(config.input_shape)
    for filters in (32, 64):
        x = _conv(filters, 3, config.modulated, config.tau, "relu", padding="same")(x)
        x = _conv(filters, 3, config.modulated, config.tau, "relu")(x)
        x = layers.MaxPooling2D(2)(x)
        x = layers.Dropout(0.25)(x)
    x = layers.Flatten()(x)
    x = layers.Dense(512, activation="relu")(x)
    x = layers.Dropout(0.5)(x)
    outputs = layers.Dense(config.num_classes)(x)
    return keras.Model(inputs, outputs, name="modulated_cnn" if config.modulated else "cnn")


def _bn_relu(x):
    return layers.ReLU()(layers.BatchNormalization()(x))


def densenet(config):
    """DenseNet-40 for CIFAR (Huang et al. 2017, no bottleneck or compression): a 3x3
    convolution with 16 filters, three dense blocks of (depth - 4) / 3 layers
    BN-ReLU-conv3x3(k)-dropout joined by transitions BN-ReLU-conv1x1-dropout-avg-pool,
    then BN-ReLU, global average pooling, 10 logits.

    Modulated (paper Figure 2): each dense-block layer's convolution gets a 1-filter
    modulator on the same (BN-ReLU'd) input, scaling its k outputs; the next layer's
    BN-ReLU is their activation.
    """
    k, per_block = config.growth_rate, (config.depth - 4) // 3
    x = inputs = keras.Input(config.input_shape)
    x = layers.Conv2D(16, 3, padding="same", use_bias=False)(x)
    for block in range(3):
        for _ in range(per_block):
            y = _conv(k, 3, config.modulated, config.tau, padding="same", use_bias=False)(
                _bn_relu(x))
            x = layers.Concatenate()([x, layers.Dropout(config.dropout)(y)])
        if block < 2:
            x = layers.Conv2D(x.shape[-1], 1, use_bias=False)(_bn_relu(x))
            x = layers.AveragePooling2D(2)(layers.Dropout(config.dropout)(x))
    x = layers.GlobalAveragePooling2D()(_bn_relu(x))
    outputs = layers.Dense(config.num_classes)(x)
    name = f"densenet{config.depth}_k{k}"
    return keras.Model(inputs, outputs, name=f"modulated_{name}" if config.modulated else name)


def lstm_cell(config):
    """The recurrent cell of an LSTM variant (paper Figure 6)."""
    if config.cell == "modulated":
        return ModulatedLSTMCell(config.hidden, tau=config.tau)
    if config.cell == "extra_input_gate":
        return ModulatedLSTMCell(config.hidden, tau="sigmoid", position="post")
    return layers.LSTMCell(config.hidden)


def lstm_classifier(config):
    """Token ids -> embedding -> one LSTM layer -> last hidden state -> dropout -> logits.

    Id 0 is padding (masked unless ``mask_padding`` is False: the last hidden state is
    the one at the last real token).
    """
    inputs = keras.Input((None,), dtype="int32")
    x = layers.Embedding(config.vocab_size, config.embedding_dim,
                         mask_zero=config.mask_padding)(inputs)
    x = layers.RNN(lstm_cell(config))(x)
    x = layers.Dropout(config.dropout)(x)
    outputs = layers.Dense(config.num_classes)(x)
    return keras.Model(inputs, outputs, name=f"{config.cell}_lstm")


def build(config):
    """The model of a :class:`ModelConfig`."""
    return {"cnn": cifar10_cnn, "densenet": densenet,
            "lstm": lstm_classifier}[config.architecture](config)


def recurrent_parameters(cell):
    """Weights of a built cell's hidden-to-hidden matrices: gates x N^2.

    This is what the paper's Table 3 counts: 5 N^2 (modulated, C3), 4 (5N/4)^2 (C1) and
    4 N^2 (C2), i.e. 5,120 / 6,400 / 4,096 / 5,120 for N = 32 and 72,000 / 90,000 /
    57,600 / 72,000 for N = 120 (so the SST-2 model's N was 120 and "hidden 150" is
    C1's 5N/4). A whole cell also has the input kernels and biases,
    ``gates N (input_dim + 1)``.
    """
    matrices = [w for w in cell.weights if "recurrent_kernel" in w.path]
    return sum(int(w.shape[0] * w.shape[1]) for w in matrices)


# The paper's Table 1 (CNNs, total parameters) and Table 3 (LSTM cells) next to ours.
PAPER_TABLE1 = {"cnn": (1.25e6, 1.25e6), "densenet_k12": (1.00e6, 1.07e6),
                "densenet_k10": (0.71e6, 0.77e6)}
PAPER_TABLE3 = {32: {"modulated": 5.1e3, "C1": 6.4e3, "C2": 4.1e3, "C3": 5.1e3},
                120: {"modulated": 72e3, "C1": 90e3, "C2": 57.6e3, "C3": 72e3}}
LSTM_VARIANTS = {"modulated": ("modulated", 1), "C1": ("lstm", 1.25), "C2": ("lstm", 1),
                 "C3": ("extra_input_gate", 1)}


def parameter_table(input_dims=(("NAMES", 32, 128), ("SST-2", 120, 300))):
    """Rows ``(table, model, ours, paper, note)`` of the paper's parameter tables.

    CNNs: whole models (vanilla, modulated). LSTMs: the cell's recurrent matrices
    (what Table 3 counts, :func:`recurrent_parameters`) and the whole cell.
    """
    rows = []
    for key, config in (("cnn", ModelConfig("cnn")),
                        ("densenet_k12", ModelConfig("densenet", growth_rate=12)),
                        ("densenet_k10", ModelConfig("densenet", growth_rate=10))):
        for modulated, paper in zip((False, True), PAPER_TABLE1[key]):
            model = build(dataclasses.replace(config, modulated=modulated))
            trainable = sum(int(w.numpy().size) for w in model.trainable_weights)
            rows.append(("Table 1", f"{'modulated' if modulated else 'vanilla'} {key}",
                         model.count_params(), paper, f"{trainable:,} trainable"))
    for dataset, n, embedding in input_dims:
        for variant, (cell_kind, factor) in LSTM_VARIANTS.items():
            cell = lstm_cell(ModelConfig("lstm", cell=cell_kind, hidden=round(n * factor),
                                         tau="sigmoid"))
            cell.build((None, embedding))
            rows.append(("Table 3", f"{dataset} {variant} (N={round(n * factor)})",
                         recurrent_parameters(cell), PAPER_TABLE3[n][variant],
                         f"whole cell {cell.count_params():,} (input {embedding})"))
    return rows
