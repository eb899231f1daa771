"""The encoders the paper recipes borrow from KerasHub, hosting ``[[model.modulation]]``
specs (:mod:`nemot.modulation.host`): BERT (:mod:`.bert`; NGT, PALs) and T5 (:mod:`.t5`;
HyperGrid), and the loss of per-task heads side by side on an encoder (:mod:`.losses`;
PALs, the comparison). NeMoT itself and its GPT-2 baseline are in :mod:`nemot.models`."""
