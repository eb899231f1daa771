"""SQuAD-format extractive QA: SQuAD v2, Quoref and ROPES, and their contrast sets.

All are ``data[].paragraphs[].{context, qas[].{id, question, answers[].text}}``;
ROPES paragraphs have ``background`` and ``situation`` instead of ``context``
(passage = background + " " + situation). Format ``<p1> ctx <q> q <sep>`` ->
``answer </s>`` (unanswerable SQuAD v2 questions -> ``</s>`` only).

SQuAD's ``answers`` are alternatives (one per annotator); Quoref's are the parts of
one answer (a question about several people lists every span), so Quoref keeps
them together as one multi-part answer, scored with the official multi-span
rule (:func:`nemot.evaluation.metrics.drop_f1`).
"""

import nemot.data.raw as raw
from nemot.data.qa.readers import common

# Raw file names per registry name and split.
FILES = {
    "squad_v2": {"train": ["train-v2.0.json"], "dev": ["dev-v2.0.json"]},
    "quoref": {"train": ["quoref-train-v0.1.json"], "dev": ["quoref-dev-v0.1.json"]},
    "quoref_contrast": {"test": ["quoref_test_perturbations_*.json"]},
    "ropes": {"train": ["train-v1.0.json"], "dev": ["dev-v1.0.json"]},
    "ropes_contrast": {"test": ["ropes_contrast_set_[0-9]*.json", "data/ropes_contrast_set_[0-9]*.json"]},
}
# The folder each download unpacks to (data_dir may point at it or at its parent).
TOPS = {"squad_v2": (), "quoref": ("quoref-train-dev-v0.1",), "quoref_contrast": ("quoref",),
        "ropes": ("ropes-train-dev-v1.0",), "ropes_contrast": ("ropes",)}
MULTI_PART = ("quoref", "quoref_contrast")
HUB = {"squad_v2": "rajpurkar/squad_v2", "quoref": "allenai/quoref", "ropes": "allenai/ropes"}


def ropes_context(paragraph, where, path):
    """ROPES passage: the background paragraph, then the situation."""
    background = raw.get(paragraph, "background", path, where)
    return f"{background} {raw.get(paragraph, 'situation', path, where)}"


def _context(name):
    return ropes_context if name.startswith("ropes") else common.squad_context


def read(data_dir, split, name="squad_v2"):
    """Examples of ``name`` (a key of :data:`FILES`) for ``split`` from the raw directory."""
    if split not in FILES[name]:
        raise ValueError(f"{name} has splits {sorted(FILES[name])}, got {split!r}")
    for path in common.find_files(data_dir, FILES[name][split], split, TOPS[name]):
        yield from common.squad_style(path, name, _context(name), parts=name in MULTI_PART)


def read_hub(split, name="squad_v2"):
    """SQuAD v2 / Quoref / ROPES from the Hugging Face hub (columns ``id``, ``question``,
    ``context`` or ``background``/``situation``, ``answers.text``)."""
    if name not in HUB:
        raise ValueError(f"{name} is not on the hub under a known name; pass data_dir=")
    for row in raw.hub_rows(HUB[name], None, raw.hub_split(split)):
        passage = (f"{row['background']} {row['situation']}" if name == "ropes"
                   else row["context"])
        texts = row["answers"]["text"]
        if name in MULTI_PART and texts:
            texts = [common.parts_answer(texts)]
        yield common.generative(name, row["id"], row["question"], texts, passage=passage)
