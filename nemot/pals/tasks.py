"""The tasks of the PALs reproduction: what each head predicts, its loss and its metric.

The PALs report, s.4.2 and s.5.3: every head is ``[CLS] -> dropout 0.3 -> Linear``:

========  ============================  =======  =====================  ==============
task      data                          units    loss                   metric
========  ============================  =======  =====================  ==============
sst       SST-5 (minBERT files)         5        cross-entropy          accuracy
cfimdb    CFIMDB (minBERT files)        2        cross-entropy          accuracy
quora     Quora (minBERT files)         1        BCE with logits        accuracy
sts       STS-B (minBERT files)         1        mean squared error     Pearson r
sst2      SST-2 (GLUE)                  2        cross-entropy          accuracy
qqp       QQP (GLUE)                    1        BCE with logits        accuracy
stsb      STS-B (GLUE)                  1        mean squared error     Pearson r
========  ============================  =======  =====================  ==============

``column`` says which column of the paper's tables a task fills (SST, Quora, STS).
"""

import dataclasses

HEADS = ("classes", "binary", "regression")


@dataclasses.dataclass(frozen=True)
class Task:
    """One task: its head and where its numbers go.

    Attributes:
        name: the task's name in configs.
        head: ``"classes"`` (softmax cross-entropy over ``units`` logits), ``"binary"``
            (one logit, BCE with logits) or ``"regression"`` (one value, MSE).
        units: outputs of the head.
        metric: ``"accuracy"`` or ``"pearson"``.
        column: the paper's table column (``"sst"``, ``"quora"``, ``"sts"``, or the
            task itself).
    """

    name: str
    head: str
    units: int
    metric: str
    column: str


TASKS = {t.name: t for t in (
    Task("sst", "classes", 5, "accuracy", "sst"),
    Task("cfimdb", "classes", 2, "accuracy", "cfimdb"),
    Task("quora", "binary", 1, "accuracy", "quora"),
    Task("sts", "regression", 1, "pearson", "sts"),
    Task("sst2", "classes", 2, "accuracy", "sst"),
    Task("qqp", "binary", 1, "accuracy", "quora"),
    Task("stsb", "regression", 1, "pearson", "sts"),
)}


def get_task(name, where="tasks"):
    """The :class:`Task` called ``name``; a clear error naming ``where`` otherwise."""
    if name not in TASKS:
        raise ValueError(f"{where}: task {name!r}: expected one of {sorted(TASKS)}")
    return TASKS[name]
