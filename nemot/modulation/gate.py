"""NeMoT's gate (thesis eqs. 3.12 and 3.14): the neuromodulatory output becomes sigmoid gates
that scale every vanilla-set activation."""

import keras
from keras import ops

from nemot import dropout as drop


@keras.saving.register_keras_serializable(package="nemot")
class Gate(keras.layers.Layer):
    """``gates = sigmoid(Drop(nm_out))``, ``x_gate = gates[text positions] * vanilla_out``.

    The gate values of the auxiliary positions are dropped: the last n positions of
    the neuromodulatory output line up with the n vanilla-set positions.

    Args:
        dropout: rate of the dropout on the neuromodulatory output.
        dropout_before_sigmoid: apply that dropout before the sigmoid (the original
            code, docs/spec.md section 9); False applies none.

    Example:
        >>> gate = Gate(dropout=0.1)
        >>> gates, x_gate = gate(nm_out, vanilla_out)   # [B, 3 + n, d], [B, n, d]
    """

    def __init__(self, dropout=0.0, dropout_before_sigmoid=True, **kwargs):
        super().__init__(**kwargs)
        self.dropout = dropout
        self.dropout_before_sigmoid = dropout_before_sigmoid
        self.seed_generator = drop.seed_generator(dropout and dropout_before_sigmoid)

    def call(self, nm_out, vanilla_out, training=None):
        if self.dropout_before_sigmoid:
            nm_out = drop.dropout(nm_out, self.dropout,
                                  drop.draw_seed(self.seed_generator, training))
        gates = ops.sigmoid(nm_out)
        length = ops.shape(vanilla_out)[1]
        return gates, gates[:, -length:, :] * vanilla_out

    def compute_output_spec(self, nm_out, vanilla_out, training=None):
        return (keras.KerasTensor(nm_out.shape, dtype=self.compute_dtype),
                keras.KerasTensor(vanilla_out.shape, dtype=self.compute_dtype))

    def get_config(self):
        config = super().get_config()
        config.update(dropout=self.dropout, dropout_before_sigmoid=self.dropout_before_sigmoid)
        return config
