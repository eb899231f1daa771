"""Attention masks of thesis Figure 3.2 (docs/spec.md section 2). True = may attend.

For ``a`` auxiliary tokens followed by text:

- ``<dec>``: auxiliary rows see the auxiliary columns only; text row i sees
  every auxiliary column and the text columns up to i.
- ``<enc>`` (thesis; never implemented in the original code): every position
  sees every non-pad position.
- Padding columns are never attended to. A row with nothing to attend to stays
  all False; the attention layer keeps such rows finite (no NaN).

The vanilla and output sets use the text x text part of the same rule
(``num_aux=0``): causal in ``<dec>``, full in ``<enc>``.
"""

from keras import ops

from nemot import vocab

MODES = vocab.MODES + ("auto",)


def mask_from_positions(query_positions, key_positions, key_valid, is_enc, num_aux):
    """The mask rule on explicit positions (used directly by cached decoding).

    Args:
        query_positions: int [q] positions of the query rows in the sequence.
        key_positions: int [k] positions of the key columns.
        key_valid: bool [batch, k], False for padding (or unwritten cache) columns.
        is_enc: bool [batch], True for ``<enc>`` examples.
        num_aux: auxiliary positions at the start of the sequence.

    Returns:
        bool [batch, q, k].
    """
    q = ops.expand_dims(query_positions, -1)
    k = ops.expand_dims(key_positions, 0)
    decoder = ops.logical_or(k < num_aux, k <= q)[None]
    allowed = ops.logical_or(decoder, ops.reshape(is_enc, (-1, 1, 1)))
    return ops.logical_and(allowed, ops.expand_dims(key_valid, 1))


def attention_mask(token_ids, mode="dec", num_aux=vocab.NUM_AUX, pad_id=vocab.PAD_ID):
    """Boolean attention mask [batch, L, L] for ``token_ids`` [batch, L].

    Args:
        token_ids: int tensor, auxiliary tokens first (``num_aux`` of them), then
            text right-padded with ``pad_id``.
        mode: ``"dec"``, ``"enc"``, ``"auto"`` (read each example's mode token at
            auxiliary position 1), or a bool tensor [batch] (True = ``<enc>``).
        num_aux: number of auxiliary tokens (0 for text-only sets).
        pad_id: the padding id, never attended to.

    Example:
        >>> ids = [[CLS_ID, DEC_ID, LM_ID, 11, 12, PAD_ID]]
        >>> attention_mask(ids, mode="dec", num_aux=3)[0, 4]  # text row 1
        [True, True, True, True, True, False]
    """
    token_ids = ops.convert_to_tensor(token_ids)
    batch, length = ops.shape(token_ids)[0], ops.shape(token_ids)[1]
    if isinstance(mode, str):
        if mode not in MODES:
            raise ValueError(f"mode={mode!r}: expected one of {MODES} or a bool tensor")
        if mode == "auto":
            if num_aux <= vocab.MODE_POSITION:
                raise ValueError("mode='auto' reads the mode token at auxiliary position "
                                 f"{vocab.MODE_POSITION}; num_aux={num_aux} has none")
            is_enc = ops.equal(token_ids[:, vocab.MODE_POSITION], vocab.ENC_ID)
        else:
            is_enc = ops.full((batch,), mode == "enc", dtype="bool")
    else:
        is_enc = ops.cast(mode, "bool")
    positions = ops.arange(length, dtype="int32")
    key_valid = ops.not_equal(token_ids, pad_id)
    return mask_from_positions(positions, positions, key_valid, is_enc, num_aux)
