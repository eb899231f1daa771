"""``python -m data_prep {qa,c4,sample} ...``: the command line of :mod:`nemot.data.prepare`,
and small sample data to try every command offline (:mod:`data_prep.sample`).

The shard formats are documented in :mod:`nemot.data.shards`.
"""
