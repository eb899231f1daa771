"""The C4 pre-training data (docs/spec.md §4): the seeded, resumable stream of windows as
plain numpy (:mod:`~nemot.data.c4.stream`), read from the raw ``*.json.gz`` files,
``data_prep`` shards or TensorFlow Datasets' shard files (:mod:`~nemot.data.c4.tfds`),
and its ``tf.data`` dataset (:mod:`~nemot.data.c4.pipeline`).
"""
