"""NeMoT's question answering data (thesis §3.3.1, docs/spec.md sections 3-4): the unified
text-to-text QA format (:mod:`~nemot.data.qa.format`), one reader per dataset family
(:mod:`~nemot.data.qa.readers`), the dataset registry (:mod:`~nemot.data.qa.registry`),
and the ``tf.data`` datasets of one split (:mod:`~nemot.data.qa.pipelines`) and of the
multi-format pool of general training (:mod:`~nemot.data.qa.pool`).
"""
