"""The contract every part of nemot shares: token ids, the auxiliary-token layout and
the part-of-speech categories (docs/spec.md sections 1 and 7).

Layers, models and data all read these names from here and nowhere else; this module
imports nothing from nemot.

- **Ids.** GPT-2's 50,257 BPE tokens plus 55 added tokens with fixed ids, so that
  checkpoints and formatted examples line up with the original thesis code. The
  original token list named ``(2)`` twice, so its counter reached 50,313: the
  embedding/output size is 50,313 with row 50,312 never used, and we keep it so that
  shapes match the thesis.
- **Auxiliary layout.** Every NeMoT input starts with ``[<cls>, <mode>, <task>]``
  (:data:`AUX_LAYOUT`), then the text: the mode token picks the masks (``<dec>``
  causal, ``<enc>`` bidirectional) and the task token the output block.
  :func:`check_aux_tokens` is the one check that a batch's mode and task tokens are
  valid for a model.
- **POS categories** of the highlighting reading strategy: what the data pipeline
  writes into ``pos_tags`` and the model's highlighting layer reads.
"""

import numpy as np

GPT2_VOCAB_SIZE = 50257
VOCAB_SIZE = 50313

ADDED_TOKENS = (
    ["<passage>"]
    + [f"<p{i}>" for i in range(1, 10)]
    + ["<h>", "<q>"]
    + [f"({i})" for i in range(1, 10)]
    + [
        "<enc>", "<dec>", "<mc>", "<placeholder>", "<lm>", "<mlm>", "<mqa>",
        "<pmqa>", "<bmqa>", "<pbmqa>", "<peentailment>", "<pbentailment>",
        "<pcoreference>", "<bcoreference>", "<pbcoreference>", "<psentiment>",
        "<pgqa>", "<psqa>", "<gqa>", "<pbqa>", "<translation>", "<s>", "</s>",
        "<cls>", "<sep>", "<mask>", "<pad>", "<null>", "<unk_rs>", "<aoint_rs>",
        "<highlighting_rs>", "<reread_rs>", "<summarize_rs>", "<paraphrase_rs>",
    ]
)
ADDED_TOKEN_IDS = {tok: GPT2_VOCAB_SIZE + i for i, tok in enumerate(ADDED_TOKENS)}
ID_TO_ADDED_TOKEN = {i: tok for tok, i in ADDED_TOKEN_IDS.items()}

PAD_ID = ADDED_TOKEN_IDS["<pad>"]
CLS_ID = ADDED_TOKEN_IDS["<cls>"]
SEP_ID = ADDED_TOKEN_IDS["<sep>"]
END_ID = ADDED_TOKEN_IDS["</s>"]
DEC_ID = ADDED_TOKEN_IDS["<dec>"]
ENC_ID = ADDED_TOKEN_IDS["<enc>"]
P1_ID = ADDED_TOKEN_IDS["<p1>"]
Q_ID = ADDED_TOKEN_IDS["<q>"]
OPTION_IDS = tuple(ADDED_TOKEN_IDS[f"({i})"] for i in range(1, 10))

# Ignored target positions in every target tensor.
IGNORE_ID = -1

# ---------------------------------------------------------------- auxiliary tokens

AUX_LAYOUT = ("<cls>", "<mode>", "<task>")
NUM_AUX = len(AUX_LAYOUT)
CLS_POSITION, MODE_POSITION, TASK_POSITION = range(NUM_AUX)
# Text positions n after them (the thesis' 768): the data's default length.
MAX_TEXT_LENGTH = 768
MODE_IDS = {"dec": DEC_ID, "enc": ENC_ID}
MODES = tuple(MODE_IDS)


def token_name(token_id):
    """``"<sep>"`` for an added token's id, ``"id 464"`` for a GPT-2 token."""
    return ID_TO_ADDED_TOKEN.get(int(token_id), f"id {int(token_id)}")


def task_token(block_name):
    """The task token that selects an output block: block ``lm`` <-> ``<lm>``."""
    return f"<{block_name}>"


def block_name(token):
    """The block name of a task token or name: ``"<mqa>"`` and ``"mqa"`` -> ``"mqa"``."""
    return token[1:-1] if token.startswith("<") and token.endswith(">") else token


def task_token_id(block_name):
    """Id of the task token of ``block_name``; a clear error for unknown names."""
    token = task_token(block_name)
    if token not in ADDED_TOKEN_IDS:
        raise ValueError(
            f"output block {block_name!r} has no task token {token!r} in the "
            f"NeMoT vocabulary (docs/spec.md section 1)"
        )
    return ADDED_TOKEN_IDS[token]


def mode_id(mode):
    """Id of mode ``"dec"`` or ``"enc"``; a clear error otherwise."""
    if mode not in MODE_IDS:
        raise ValueError(f"mode {mode!r}: expected one of {MODES}")
    return MODE_IDS[mode]


def aux_ids(mode, task):
    """``[<cls>, <mode>, <task>]`` ids, e.g. ``aux_ids("dec", "gqa")``."""
    return [CLS_ID, mode_id(mode), task_token_id(block_name(task))]


def check_id_range(ids, vocab_size, where="token_ids"):
    """Raise ``ValueError`` naming the first id outside ``[0, vocab_size)`` (an embedding
    would read another row, or fail, depending on the device)."""
    ids = np.asarray(ids)
    if ids.size == 0 or (ids.min() >= 0 and ids.max() < vocab_size):
        return
    index = tuple(int(i) for i in np.argwhere((ids < 0) | (ids >= vocab_size))[0])
    raise ValueError(f"{where}: id {int(ids[index])} at index {list(index)}; expected ids in "
                     f"[0, {vocab_size}) (the model's vocab_size)")


def check_aux_tokens(aux, blocks, where="input", modes=MODES):
    """Raise ``ValueError`` unless every row of ``aux`` is ``[<cls>, <mode>, <task>]``
    with a mode among ``modes`` and the task token of one of ``blocks``.

    The one check of "these mode and task tokens are valid for this model", used by
    the model on concrete inputs, by decoding on prompts and by the data pipelines
    before training.

    Args:
        aux: int array-like [batch, 3] (or [batch, >= 3]: the first three columns).
        blocks: the model's output block names (``config.output_blocks``).
        where: what the rows are, for the message (``"prompt"``, a dataset name...).
        modes: the allowed modes (decoding allows only ``("dec",)``).
    """
    aux = np.asarray(aux)
    if aux.ndim != 2 or aux.shape[1] < NUM_AUX:
        raise ValueError(f"{where}: expected [batch, {NUM_AUX}+] ids starting with "
                         f"{list(AUX_LAYOUT)}, got shape {aux.shape}")
    allowed = {mode_id(m): m for m in modes}
    task_ids = {task_token_id(b): b for b in blocks}
    for column, valid, what in ((MODE_POSITION, allowed, f"a mode token among {list(modes)}"),
                                (TASK_POSITION, task_ids, "the task token of one of the "
                                                          f"model's output blocks {list(blocks)}")):
        bad = np.flatnonzero(~np.isin(aux[:, column], list(valid)))
        if len(bad):
            row = int(bad[0])
            which = f"{where} row {row}" if len(aux) > 1 else where
            raise ValueError(f"{which}: {token_name(aux[row, column])} at auxiliary "
                             f"position {column} ({AUX_LAYOUT[column]}); expected {what}")


# ---------------------------------------------------------------- part-of-speech categories

POS_CATEGORIES = ("noun", "verb", "adjective", "adverb", "numeral", "foreign_word", "other",
                  "special_token")
# Padding positions of ``pos_tags``: no highlighting vector is added there.
POS_PAD_ID = -1
