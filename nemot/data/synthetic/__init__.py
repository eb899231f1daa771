"""Synthetic stand-ins for the benchmark data, in the layouts the readers of
:mod:`nemot.data` read, with labels a small model can learn by simple rules: smoke runs
and tests of the reproductions without downloads. Their numbers say that the code trains,
nothing about a paper's.

- :mod:`~nemot.data.synthetic.glue`: GLUE and SuperGLUE files and a SentencePiece model
  (``nemot hypergrid synthetic``).
- :mod:`~nemot.data.synthetic.minbert`: the minBERT project's files, a WordPiece
  vocabulary and a random BERT (``nemot pals synthetic``).
- :mod:`~nemot.data.synthetic.arrays`: CIFAR-10, NAMES and SST-2 as arrays
  (``synthetic = N`` in a modulated-activation config).

The synthetic QA tasks of NeMoT's own tests and demo are :mod:`nemot.training.synthetic`.
"""
