"""SQuAD-format extractive QA: SQuAD v2, Quoref and ROPES, and their contrast sets.

All are ``data[].paragraphs[].{context, qas[].{id, question, answers[].text}}``;
ROPES paragraphs have ``background`` and ``situation`` instead of ``context``
(passage = background + " " + situation). Format ``<p1> ctx <q> q <sep>`` ->
``answer </s>`` (unanswerable SQuAD v2 questions -> ``</s>`` only).
"""

from nemot.data.readers import common

# Raw file names per registry name and split.
FILES = {
    "squad_v2": {"train": ["train-v2.0.json"], "dev": ["dev-v2.0.json"]},
    "quoref": {"train": ["quoref-train-v0.1.json"], "dev": ["quoref-dev-v0.1.json"]},
    "quoref_contrast": {"test": ["quoref_test_perturbations_*.json"]},
    "ropes": {"train": ["train-v1.0.json"], "dev": ["dev-v1.0.json"]},
    "ropes_contrast": {"test": ["ropes_contrast_set_[0-9]*.json", "data/ropes_contrast_set_[0-9]*.json"]},
}
HUB = {"squad_v2": "rajpurkar/squad_v2", "quoref": "allenai/quoref", "ropes": "allenai/ropes"}


def ropes_context(paragraph, where, path):
    """ROPES passage: the background paragraph, then the situation."""
    background = common.get(paragraph, "background", path, where)
    return f"{background} {common.get(paragraph, 'situation', path, where)}"


def _context(name):
    return ropes_context if name.startswith("ropes") else common.squad_context


def read(data_dir, split, name="squad_v2"):
    """Examples of ``name`` (a key of :data:`FILES`) for ``split`` from the raw directory."""
    if split not in FILES[name]:
        raise ValueError(f"{name} has splits {sorted(FILES[name])}, got {split!r}")
    for path in common.find_files(data_dir, FILES[name][split], split):
        yield from common.squad_style(path, name, _context(name))


def read_hub(split, name="squad_v2"):
    """SQuAD v2 / Quoref / ROPES from the Hugging Face hub (needs the network, untested offline)."""
    if name not in HUB:
        raise ValueError(f"{name} is not on the hub under a known name; pass data_dir=")
    hub_split = {"dev": "validation"}.get(split, split)
    for row in common.hub_rows(HUB[name], None, hub_split):
        passage = (f"{row['background']} {row['situation']}" if name == "ropes"
                   else row["context"])
        yield common.generative(name, row["id"], row["question"], row["answers"]["text"],
                                passage=passage)
