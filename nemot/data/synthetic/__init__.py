"""Synthetic data in the layouts the readers of :mod:`nemot.data` read, with labels a small
model can learn by simple rules: smoke runs, tests and the demo without downloads. Their
numbers say that the code trains, nothing about a paper's.

- :mod:`~nemot.data.synthetic.qa`: NeMoT's QA tasks in the unified format (multiple
  choice and generation; the demo, ``python -m data_prep sample``, the training tests).
- :mod:`~nemot.data.synthetic.glue`: GLUE and SuperGLUE files and a SentencePiece model
  (``nemot hypergrid synthetic``).
- :mod:`~nemot.data.synthetic.minbert`: the minBERT project's files, a WordPiece
  vocabulary and a random BERT (``nemot pals synthetic``).
- :mod:`~nemot.data.synthetic.arrays`: CIFAR-10, NAMES and SST-2 as arrays
  (``synthetic = N`` in a modulated-activation config).
"""
