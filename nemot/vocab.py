"""The NeMoT vocabulary: GPT-2's 50,257 BPE tokens plus 55 added tokens (SPEC.md section 1).

The ids are fixed so that checkpoints and formatted examples line up with the
original thesis code. The original token list named ``(2)`` twice, so its
counter reached 50,313 and the embedding/output size is 50,313 with row 50,312
never used; we keep that size so that shapes match the thesis.
"""

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


def task_token(block_name):
    """The task token that selects an output block: block ``lm`` <-> ``<lm>``."""
    return f"<{block_name}>"


def task_token_id(block_name):
    """Id of the task token of ``block_name``; a clear error for unknown names."""
    token = task_token(block_name)
    if token not in ADDED_TOKEN_IDS:
        raise ValueError(
            f"output block {block_name!r} has no task token {token!r} in the "
            f"NeMoT vocabulary (SPEC.md section 1)"
        )
    return ADDED_TOKEN_IDS[token]
