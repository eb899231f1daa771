"""One small reader per dataset family; all share :mod:`nemot.data.readers.common`
and yield :class:`nemot.data.QAExample` (language-modelling sets yield strings).

Every reader reads the raw files of its dataset from a local directory
(``read(data_dir, split)``) and, with the network and the ``datasets`` package,
from the Hugging Face hub (``read_hub(split)``; not testable offline).
Use them by name through :mod:`nemot.data.registry`.
"""
