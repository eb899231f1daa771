"""One small reader per QA dataset family; all share :mod:`nemot.data.qa.readers.common`
and :mod:`nemot.data.raw` and yield :class:`nemot.data.QAExample` (language-modelling sets
yield strings).

Every reader reads the raw files of its dataset, as the authors publish them, from a
local directory (``read(data_dir, split)``; ``data_dir`` is the archive's top folder or
the folder holding it) and, with the network and the optional ``datasets`` package,
from the Hugging Face hub (``read_hub(split)``; the network is touched only in
:func:`nemot.data.raw.hub_rows`, which the tests feed offline).
Use them by name through :mod:`nemot.data.qa.registry`.
"""
