"""Language-modelling evaluation sets with the thesis clean-ups (SPEC.md section 4).

Readers yield documents (strings):

- WikiText-2/103 (``wiki.{train,valid,test}.tokens`` or ``.raw``): articles split on
  top-level headings (``= Title =``); the title, sub-heading lines (``= = ... = =``),
  newlines and ``<unk>`` are dropped.
- PTB (``ptb.{train,valid,test}.txt``): the whole file is one document, newline -> space.
- LAMBADA (``lambada_{test,development}_plain_text.txt``): one document per line,
  with newlines, backquotes and apostrophes removed.
"""

import re

from nemot.data.readers import common

_TOP_HEADING = re.compile(r"^ ?= [^=].* = ?$")
_SUB_HEADING = re.compile(r"^ ?(= ){2,}.*( =){2,} ?$")


def wikitext_documents(text):
    """Articles of a WikiText file, cleaned as in the thesis."""
    documents, current = [], None
    for line in text.splitlines():
        if _TOP_HEADING.match(line.rstrip("\n")):
            if current is not None:
                documents.append(current)
            current = []
        elif _SUB_HEADING.match(line):
            continue
        elif current is not None:
            current.append(line)
    if current is not None:
        documents.append(current)
    cleaned = ("".join(lines).replace("<unk>", "") for lines in documents)
    return [doc.strip() for doc in cleaned if doc.strip()]


def _read_text(data_dir, split, patterns):
    (path,) = common.find_files(data_dir, patterns, split)
    return path.read_text(encoding="utf-8")


def read_wikitext(data_dir, split):
    """WikiText-2 or -103 articles of ``split`` (``train``/``valid``/``test``)."""
    text = _read_text(data_dir, split, [f"wiki.{split}.tokens", f"wiki.{split}.raw"])
    return iter(wikitext_documents(text))


def read_ptb(data_dir, split):
    """The Penn Treebank file of ``split`` as one document."""
    text = _read_text(data_dir, split, [f"ptb.{split}.txt"])
    return iter([text.replace("\n", " ").strip()])


def lambada_documents(text):
    """LAMBADA passages: one per line, with backquotes and apostrophes removed."""
    cleaned = (line.replace("`", "").replace("'", "") for line in text.split("\n"))
    return [line.strip() for line in cleaned if line.strip()]


def read_lambada(data_dir, split):
    """LAMBADA passages of ``split`` (``test`` or ``dev``)."""
    name = {"dev": "development"}.get(split, split)
    return iter(lambada_documents(_read_text(data_dir, split, [f"lambada_{name}_plain_text.txt"])))


def read_wikitext_hub(split, config="wikitext-2-raw-v1"):
    """WikiText from the hub (``Salesforce/wikitext``; needs the network, untested offline)."""
    hub_split = {"valid": "validation"}.get(split, split)
    lines = common.hub_rows("Salesforce/wikitext", config, hub_split)["text"]
    return iter(wikitext_documents("".join(lines)))


def read_ptb_hub(split):
    """PTB from the hub (``ptb_text_only``; needs the network, untested offline)."""
    hub_split = {"valid": "validation"}.get(split, split)
    sentences = common.hub_rows("ptb_text_only", None, hub_split)["sentence"]
    return iter([" ".join(sentences)])


def read_lambada_hub(split):
    """LAMBADA from the hub (``EleutherAI/lambada_openai``, test only; untested offline)."""
    return iter(lambada_documents("\n".join(common.hub_rows("EleutherAI/lambada_openai", "en",
                                                              split)["text"])))
