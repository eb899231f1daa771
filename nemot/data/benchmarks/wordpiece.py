"""BERT's word pieces: the tokenizer of a checkpoint and the packer of segments into
``[CLS] A [SEP] B [SEP]`` rows (KerasHub's ``BertTokenizer`` and ``MultiSegmentPacker``).

Data code (the SuperGLUE pair encoder, the minBERT tasks) packs with these; the BERT host
(:mod:`nemot.hosts.bert`) loads its checkpoints' tokenizer with :func:`load_tokenizer`.
"""

import keras_hub
import numpy as np

TRUNCATIONS = ("round_robin", "waterfall", "only_first")


def load_tokenizer(spec, lowercase=True):
    """A ``keras_hub.models.BertTokenizer``: a ``vocab.txt`` path (``lowercase`` as the
    checkpoint was trained: uncased models lower-case), or a preset name or directory
    (KerasHub or Hugging Face BERT)."""
    spec = str(spec)
    if spec.endswith(".txt"):
        return keras_hub.models.BertTokenizer(vocabulary=spec, lowercase=lowercase)
    return keras_hub.models.BertTokenizer.from_preset(spec)


class InputPacker:
    """Word-piece segments -> BERT inputs of exactly ``sequence_length`` ids:
    ``prefix [CLS] A [SEP] B [SEP]``, padded with ``[PAD]`` on the right; segment ids 0
    for ``prefix [CLS] A [SEP]``, 1 for ``B [SEP]`` (KerasHub's ``MultiSegmentPacker``).

    Args:
        tokenizer: a ``keras_hub.models.BertTokenizer`` (or anything with ``token_to_id``).
        sequence_length: ids per row.
        truncate: when a row is too long: ``"round_robin"`` (cut the segments in turn),
            ``"waterfall"`` (cut the last first), or ``"only_first"`` (cut only the end of
            A; the others stay whole, and a row whose others do not fit is an error: Hugging
            Face's ``truncation="only_first"``).
        prefix_ids: ids placed before ``[CLS]`` (NGT's auxiliary tokens), in segment 0.

    Example:
        >>> packer = InputPacker(tokenizer, 16, truncate="only_first")   # doctest: +SKIP
        >>> packer([tokenizer(["a cat"]), tokenizer(["a dog"])])["token_ids"].shape
        (1, 16)
    """

    def __init__(self, tokenizer, sequence_length, truncate="round_robin", prefix_ids=()):
        if truncate not in TRUNCATIONS:
            raise ValueError(f"truncate={truncate!r}: expected one of {TRUNCATIONS}")
        self.sequence_length = int(sequence_length)
        self.truncate = truncate
        self.prefix_ids = [int(i) for i in prefix_ids]
        self.pad_id = tokenizer.token_to_id("[PAD]")
        self.packer = keras_hub.layers.MultiSegmentPacker(
            sequence_length=self.sequence_length,
            start_value=[*self.prefix_ids, tokenizer.token_to_id("[CLS]")],
            end_value=tokenizer.token_to_id("[SEP]"), pad_value=self.pad_id,
            truncate="waterfall" if truncate == "only_first" else truncate)

    def _cut_first(self, segments, row_names):
        """Segment A of each row cut to the room the others leave."""
        fixed = len(self.prefix_ids) + 1 + len(segments)  # prefix, [CLS], the [SEP]s
        first = []
        for r, row in enumerate(zip(*segments)):
            later = sum(len(ids) for ids in row[1:])
            room = self.sequence_length - fixed - later
            if room < 0:
                name = f"row {r}" if row_names is None else f"row {r} ({row_names[r]})"
                raise ValueError(
                    f"{name}: segment B has {later} word pieces, more than the "
                    f"{self.sequence_length - fixed} a sequence of {self.sequence_length} can "
                    "hold (truncate='only_first' cuts only segment A)")
            first.append(list(row[0])[:room])
        return [first, *segments[1:]]

    def __call__(self, segments, row_names=None):
        """``segments``: one list per segment of each row's ids (lists, or a tokenizer's
        ragged output); ``row_names``: how errors name the rows. Returns int32 numpy
        ``token_ids``, ``segment_ids`` and ``padding_mask`` [rows, sequence_length]."""
        segments = [s.to_list() if hasattr(s, "to_list") else [list(ids) for ids in s]
                    for s in segments]
        if self.truncate == "only_first":
            segments = self._cut_first(segments, row_names)
        if not segments[0]:
            empty = np.zeros((0, self.sequence_length), "int32")
            return {"token_ids": empty, "segment_ids": empty, "padding_mask": empty}
        token_ids, segment_ids = self.packer(tuple(segments))
        token_ids = np.asarray(token_ids, "int32")
        return {"token_ids": token_ids, "segment_ids": np.asarray(segment_ids, "int32"),
                "padding_mask": (token_ids != self.pad_id).astype("int32")}
