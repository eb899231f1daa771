"""Context-dependent modulation of activation functions (*Context Dependent Modulation of Activation Function*): the reproduction.

The layers live in :mod:`nemot.modulation.activation`; this package wires them into the
paper's models (``models``), splits its data (``data``, on the readers of :mod:`nemot.data`),
runs one table row per config for :mod:`nemot.experiments` (``experiment``,
``configs/modact/*.toml``) and has the ``nemot modact`` command (``cli``). See docs/modact.md.
"""
