"""``python -m data_prep {qa,c4} ...``: the command line of :mod:`nemot.data.prepare`.

The shard formats are documented in :mod:`nemot.data.shards`.
"""
