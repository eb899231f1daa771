"""The benchmark data of the papers reproduced beside NeMoT, one module per dataset, each
with one :class:`~nemot.data.DataError` naming file, line and field:
:mod:`~nemot.data.benchmarks.glue` (GLUE, SST-2 included),
:mod:`~nemot.data.benchmarks.superglue` (SuperGLUE rows, pair encoding, official
predictions), :mod:`~nemot.data.benchmarks.minbert` (the CS224N minBERT project's files),
:mod:`~nemot.data.benchmarks.names` and :mod:`~nemot.data.benchmarks.cifar10`; read from
files, TensorFlow Datasets (:mod:`~nemot.data.benchmarks.tfds_rows`) or the Hugging Face
hub. :mod:`~nemot.data.benchmarks.wordpiece` tokenises for BERT;
:mod:`~nemot.data.benchmarks.text_to_text` gives GLUE and SuperGLUE in T5's text-to-text
form and :mod:`~nemot.data.benchmarks.mixture` mixes them for a T5 backbone.
"""
