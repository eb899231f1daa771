"""Strings to NeMoT's inputs and targets: the unified text-to-text format (thesis §3.3.1,
:mod:`nemot.data.qa.format`) as a KerasHub ``CausalLMPreprocessor``.

A formatted example is one string, ``"<p1> passage <q> question (1) option ... <sep>
answer </s>"`` (the prompt is everything up to the first ``<sep>``), or a dict of fields
``{"question", "passage", "options", "answer", "label"}`` that :class:`Formatter` writes
in that layout. The preprocessor adds the auxiliary tokens ``[<cls>, <mode>, <task>]`` of
its ``task`` and ``mode`` and right-pads the text to ``sequence_length`` with ``<pad>``.
"""

import contextlib

import keras
import numpy as np
from keras_hub.models import CausalLMPreprocessor

from nemot import vocab
from nemot.data.qa.format import Formatter, QAExample, assemble, truncate
from nemot.models.generation import PROMPT_ROUNDING, buffer_shapes
from nemot.models.nemot_backbone import NeMoTBackbone
from nemot.models.nemot_tokenizer import NeMoTTokenizer

FIELDS = ("question", "passage", "options", "answer", "label")

def _strings(value):
    value = value.numpy() if hasattr(value, "numpy") else value
    if isinstance(value, (str, bytes)):
        return [value.decode("utf-8") if isinstance(value, bytes) else value], True
    return [v.decode("utf-8") if isinstance(v, bytes) else str(v)
            for v in np.asarray(value, dtype=object).reshape(-1)], False


def _is_graph_tensor(x):
    """Whether ``x`` (or a value of it) is a symbolic TensorFlow tensor: the preprocessor
    runs inside a ``tf.data`` map."""
    values = x.values() if isinstance(x, dict) else [x]
    return any(type(v).__name__ in ("SymbolicTensor", "Tensor") and not hasattr(v, "numpy")
               for v in values)


@keras.saving.register_keras_serializable(package="nemot")
class NeMoTPreprocessor(CausalLMPreprocessor):
    """Unified-format strings -> ``({"token_ids"}, {"task_targets", "lm_targets"})``.

    ``token_ids`` [batch, 3 + sequence_length] (auxiliary tokens first, ``<pad>`` after
    the text); the targets [batch, sequence_length] with ``-1`` where a position does not
    count (see :mod:`nemot.data.qa.format`). Generation takes prompts (the string up to and
    including ``<sep>``) and gives back the generated text.

    Args:
        tokenizer: a :class:`NeMoTTokenizer`.
        sequence_length: text positions (the model's ``max_text_length``).
        task: the task token's name (an output block: ``"gqa"``, ``"mqa"``, ``"lm"`` ...).
        mode: ``"dec"`` (causal) or ``"enc"`` (bidirectional), the mode token.
        mqa_mode: ``"label"`` (a multiple-choice answer is the option token ``(k)``) or
            ``"generate"`` (the option's text).

    Example:
        >>> pre = NeMoTPreprocessor(NeMoTTokenizer(), sequence_length=32)
        >>> x, y = pre(["<q> Is the sky blue? <sep> yes </s>"])
        >>> x["token_ids"].shape, y["task_targets"].shape    # (1, 35), (1, 32)
    """

    backbone_cls = NeMoTBackbone
    tokenizer_cls = NeMoTTokenizer

    def __init__(self, tokenizer, sequence_length=768, task="gqa", mode="dec",
                 mqa_mode="label", **kwargs):
        kwargs.pop("add_start_token", None)
        kwargs.pop("add_end_token", None)
        super().__init__(tokenizer, sequence_length=sequence_length, add_start_token=False,
                         add_end_token=False, **kwargs)
        vocab.aux_ids(mode, task)  # a clear error for an unknown task or mode, now
        self.task = task
        self.mode = mode
        self.mqa_mode = mqa_mode
        self.built = True  # no weights (Keras' quantize visits every layer of the task)

    def build(self, input_shape=None):
        self.built = True

    def formatter(self, task=None, mode=None, sequence_length=None):
        return Formatter(self.tokenizer.tokenizer, sequence_length or self.sequence_length,
                         mode or self.mode, task or self.task, mqa_mode=self.mqa_mode)

    def _examples(self, x):
        """``QAExample`` s of a dict of field batches."""
        unknown = sorted(set(x) - set(FIELDS))
        if unknown or "question" not in x:
            raise ValueError(f"{self.name}: fields {unknown or ['question missing']}; "
                             f"expected a string or a dict of {FIELDS} with 'question'")
        questions, _ = _strings(x["question"])
        n = len(questions)

        def column(name, default):
            if name not in x:
                return [default] * n
            values = x[name]
            return list(values) if isinstance(values, (list, tuple, np.ndarray)) else [values]

        passages, options = column("passage", None), column("options", ())
        answers, labels = column("answer", None), column("label", None)
        task = "mqa" if self.task == "mqa" else "gqa"
        return [QAExample(id=str(i), question=questions[i], passage=passages[i],
                          options=tuple(options[i] or ()),
                          answers=(answers[i],) if answers[i] else (),
                          label=None if labels[i] is None else int(labels[i]),
                          task="mqa" if options[i] else task)
                for i in range(n)]

    def _split(self, text):
        """``(prompt, answer)`` of a formatted string: up to and including ``<sep>``, and
        after it."""
        head, sep, tail = text.partition("<sep>")
        if not sep:
            raise ValueError(f"{self.name}: formatted example {text[:60]!r} has no <sep>; "
                             "expected '... <q> question <sep> answer </s>'")
        return f"{head}{sep}", tail.strip()

    def call(self, x, y=None, sample_weight=None, sequence_length=None):
        if y is not None or sample_weight is not None:
            raise ValueError(f"{self.name}: the targets come from the formatted examples; "
                             "pass the examples only (no y, no sample_weight)")
        length = sequence_length or self.sequence_length
        if _is_graph_tensor(x):
            return self._call_in_graph(x, length)
        return self._format(x, length)

    def _call_in_graph(self, x, length):
        """The Python formatter inside a ``tf.data`` pipeline (KerasHub's ``fit`` maps
        the preprocessor over a dataset): one ``tf.numpy_function`` per batch. One
        example gives unbatched outputs, as GPT-2's preprocessor does."""
        import tensorflow as tf

        keys = sorted(x) if isinstance(x, dict) else None
        tensors = [x[k] for k in keys] if keys else [x]
        if tensors[0].shape.rank == 0:  # one example (an unbatched dataset): as a batch of one
            batched = self._call_in_graph({k: v[None] for k, v in x.items()} if keys
                                          else x[None], length)
            return tf.nest.map_structure(lambda t: t[0], batched)

        def run(*values):
            values = [np.array([v.decode("utf-8") if isinstance(v, bytes) else v
                                for v in np.asarray(a).reshape(-1)], dtype=object).reshape(
                np.shape(a)) for a in values]
            if keys:
                fields = dict(zip(keys, values))
                if "options" in fields:
                    fields["options"] = [tuple(o for o in row if o) for row in fields["options"]]
                inputs = fields
            else:
                inputs = values[0]
            features, targets = self._format(inputs, length)
            return features["token_ids"], targets["task_targets"], targets["lm_targets"]

        token_ids, task_targets, lm_targets = tf.numpy_function(
            run, tensors, [tf.int32, tf.int32, tf.int32])
        batch = tensors[0].shape[0]
        return ({"token_ids": tf.ensure_shape(token_ids, (batch, vocab.NUM_AUX + length))},
                {"task_targets": tf.ensure_shape(task_targets, (batch, length)),
                 "lm_targets": tf.ensure_shape(lm_targets, (batch, length))})

    def _format(self, x, length):
        aux = vocab.aux_ids(self.mode, self.task)
        if isinstance(x, dict):
            formatted = self.formatter(sequence_length=length).format_batch(self._examples(x))
            rows = [(f.token_ids[vocab.NUM_AUX:], f.task_targets, f.lm_targets)
                    for f in formatted]
        else:
            texts, _ = _strings(x)
            pairs = [self._split(t) for t in texts]
            ids = self.tokenizer.tokenizer.encode_batch([t for pair in pairs for t in pair])
            label_mode = self.task == "mqa" and self.mqa_mode == "label"
            rows = [assemble(ids[2 * i], ids[2 * i + 1], label_mode, length)
                    for i in range(len(pairs))]
        token_ids = np.full((len(rows), vocab.NUM_AUX + length), vocab.PAD_ID, np.int32)
        task_targets = np.full((len(rows), length), vocab.IGNORE_ID, np.int32)
        lm_targets = np.full((len(rows), length), vocab.IGNORE_ID, np.int32)
        token_ids[:, :vocab.NUM_AUX] = aux
        for row, (text_ids, task_row, lm_row) in enumerate(rows):
            token_ids[row, vocab.NUM_AUX:vocab.NUM_AUX + len(text_ids)] = text_ids
            task_targets[row, :len(task_row)] = task_row
            lm_targets[row, :len(lm_row)] = lm_row
        return ({"token_ids": token_ids},
                {"task_targets": task_targets, "lm_targets": lm_targets})

    @contextlib.contextmanager
    def generation_options(self, task=None, mode=None, max_new_tokens=None):
        """Within the block, :meth:`generate_preprocess` takes these defaults (how
        ``NeMoTCausalLM.generate`` passes its own arguments through KerasHub's)."""
        previous = self._generation_options
        self._generation_options = {"task": task, "mode": mode, "max_new_tokens": max_new_tokens}
        try:
            yield
        finally:
            self._generation_options = previous

    _generation_options = {}

    def generate_preprocess(self, x, sequence_length=None, task=None, mode=None,
                            max_new_tokens=None):
        """Formatted prompts (or fields) to ``{"token_ids", "padding_mask"}`` of
        ``[batch, 3 + L]``: the auxiliary tokens, then each prompt right-padded with
        ``<pad>``; ``padding_mask`` is True at the prompts' text (the auxiliary tokens are
        not text). A prompt keeps at most ``L - 1`` tokens (its first and its last ones).

        ``L`` is ``sequence_length`` (KerasHub's ``max_length``); else, with
        ``max_new_tokens``, the longest prompt rounded up to 64 plus ``max_new_tokens`` (at
        most this preprocessor's ``sequence_length``), and ``"generation_end"`` [batch]
        gives each example's budget; else this preprocessor's ``sequence_length``.
        """
        options = self._generation_options
        task = task or options.get("task")
        mode = mode or options.get("mode")
        max_new_tokens = max_new_tokens or options.get("max_new_tokens")
        if isinstance(x, dict):
            formatter = self.formatter(task, mode)
            texts = [formatter.prompt_text(e) for e in self._examples(x)]
        else:
            formatter = self.formatter(task, mode)
            texts, _ = _strings(x)
        prompts = self.tokenizer.tokenizer.encode_batch(texts)
        length = sequence_length
        if length is None and max_new_tokens:
            _, length = buffer_shapes(self.sequence_length, PROMPT_ROUNDING,
                                      [len(ids) for ids in prompts], max_new_tokens)
        length = length or self.sequence_length
        prompts = [truncate(ids, length - 1)[0] for ids in prompts]
        lengths = np.array([len(ids) for ids in prompts], np.int32)
        token_ids = np.full((len(prompts), vocab.NUM_AUX + length), vocab.PAD_ID, np.int32)
        token_ids[:, :vocab.NUM_AUX] = vocab.aux_ids(formatter.mode, formatter.task_token)
        for row, ids in enumerate(prompts):
            token_ids[row, vocab.NUM_AUX:vocab.NUM_AUX + len(ids)] = ids
        positions = np.arange(length)[None]
        padding_mask = np.concatenate([np.zeros((len(prompts), vocab.NUM_AUX), bool),
                                       positions < lengths[:, None]], axis=1)
        out = {"token_ids": token_ids, "padding_mask": padding_mask}
        if max_new_tokens:
            out["generation_end"] = lengths + np.int32(max_new_tokens)
        return out

    def generate_postprocess(self, x):
        """Texts of a generation's ``{"token_ids", "padding_mask"}``: the marked positions,
        without ``</s>`` and ``<pad>``."""
        token_ids = np.asarray(keras.ops.convert_to_numpy(x["token_ids"]))
        padding_mask = np.asarray(keras.ops.convert_to_numpy(x["padding_mask"]))
        strip = (vocab.END_ID, vocab.PAD_ID)
        return [self.tokenizer.tokenizer.decode([int(t) for t in ids[mask] if t not in strip])
                for ids, mask in zip(token_ids, padding_mask)]

    def get_config(self):
        config = super().get_config()
        for key in ("add_start_token", "add_end_token"):
            config.pop(key, None)
        return {**config, "task": self.task, "mode": self.mode, "mqa_mode": self.mqa_mode}
