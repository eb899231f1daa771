"""nemot's tokenizer as a KerasHub tokenizer: :class:`nemot.Tokenizer` (GPT-2 BPE plus the
55 added tokens, docs/spec.md section 1) inside a ``keras_hub.tokenizers.Tokenizer``, so that
it is a layer you call, it saves into a preset's ``assets/tokenizer/`` and
``keras_hub.models.Tokenizer.from_preset(dir)`` reads it back.

``nemot.Tokenizer`` itself stays a plain Python object (no Keras, no TensorFlow), for the
data pipelines and their worker processes.
"""

import filecmp
import shutil
import tempfile
from pathlib import Path

import keras
import numpy as np
from keras_hub.tokenizers import Tokenizer as KerasHubTokenizer

from nemot import vocab
from nemot.data.tokenizer import Tokenizer, default_files
from nemot.models.nemot_backbone import NeMoTBackbone

VOCABULARY_ASSET = "vocabulary.json"
MERGES_ASSET = "merges.txt"


def _is_graph_tensor(value):
    """Whether ``value`` is a symbolic TensorFlow tensor (a ``tf.data`` map)."""
    import tensorflow as tf

    return isinstance(value, (tf.Tensor, tf.RaggedTensor)) and not tf.executing_eagerly()


def _as_text(value):
    return value.decode("utf-8") if isinstance(value, bytes) else str(value)


@keras.saving.register_keras_serializable(package="nemot")
class NeMoTTokenizer(KerasHubTokenizer):
    """GPT-2 BPE with nemot's added tokens at their fixed ids, as a KerasHub tokenizer.

    Called on a string it returns its ids (an int32 array); on a batch of strings (a list,
    or a numpy array of strings) a list of id lists; inside a ``tf.data`` map, a tensor or
    a ragged tensor, as GPT-2's tokenizer does. ``detokenize`` is the inverse.
    ``end_token_id`` is ``</s>``'s and ``pad_token_id`` ``<pad>``'s.

    Args:
        vocabulary: path of GPT-2's token -> id JSON file (default: the GPT-2 files shipped
            with nemot's dependencies; a preset's are read by ``from_preset``).
        merges: path of the BPE merges file.
        engine: ``"tiktoken"`` (default, fastest) or ``"tokenizers"``.

    Example:
        >>> tok = NeMoTTokenizer()
        >>> tok("<q> Is it? <sep>")[-1] == tok.token_to_id("<sep>")
        True
        >>> tok.detokenize(tok(["Hello world", "<sep> yes </s>"]))
        ['Hello world', '<sep> yes </s>']
    """

    backbone_cls = NeMoTBackbone

    def __init__(self, vocabulary=None, merges=None, engine="tiktoken", **kwargs):
        super().__init__(**kwargs)
        self.engine = engine
        self.file_assets = [VOCABULARY_ASSET, MERGES_ASSET]
        self.set_files(vocabulary, merges)
        self._add_special_token("</s>", "end_token")
        self._add_special_token("<pad>", "pad_token")
        self.built = True  # no weights (Keras' quantize visits every layer of the task)

    def set_files(self, vocabulary=None, merges=None):
        """Read the GPT-2 vocabulary and merges (both None: nemot's default files)."""
        if vocabulary is None and merges is None:
            self.tokenizer = Tokenizer(engine=self.engine)
        else:
            self.tokenizer = Tokenizer(vocabulary=vocabulary, merges=merges, engine=self.engine)

    def save_assets(self, dir_path):
        vocabulary, merges = self.tokenizer.files
        shutil.copyfile(vocabulary, Path(dir_path) / VOCABULARY_ASSET)
        shutil.copyfile(merges, Path(dir_path) / MERGES_ASSET)

    def load_assets(self, dir_path):
        files = [Path(dir_path) / VOCABULARY_ASSET, Path(dir_path) / MERGES_ASSET]
        if all(filecmp.cmp(f, d, shallow=False) for f, d in zip(files, default_files())):
            self.set_files()
            return
        # Keras reads a .keras file's assets from a folder it deletes after loading: keep
        # a copy for as long as the tokenizer lives.
        self._asset_copy = tempfile.TemporaryDirectory(prefix="nemot_tokenizer_")
        for file in files:
            shutil.copyfile(file, Path(self._asset_copy.name) / file.name)
        self.set_files(*(Path(self._asset_copy.name) / f.name for f in files))

    def call(self, inputs, *args, training=None, **kwargs):
        return self.tokenize(inputs)

    def tokenize(self, inputs):
        """Ids of a string (int32 array), or a list of id lists for a batch of strings;
        inside a ``tf.data`` map, a tensor (a string) or a ragged tensor (a batch)."""
        if _is_graph_tensor(inputs):
            return self._in_graph(inputs, self.tokenize, self._tokenize_batch)
        if hasattr(inputs, "numpy"):
            inputs = inputs.numpy()
        texts = np.asarray(inputs, dtype=object)
        if texts.ndim == 0:
            return np.asarray(self.tokenizer.encode(_as_text(texts.item())), np.int32)
        if texts.ndim != 1:
            raise ValueError(f"{self.name}: expected a string or a batch (rank 1) of strings, "
                             f"got rank {texts.ndim}")
        return self.tokenizer.encode_batch([_as_text(t) for t in texts])

    def detokenize(self, inputs):
        """Text of one id sequence, or a list of texts for a batch of them (a list of id
        lists, a 2-D array, a ragged tensor); inside a ``tf.data`` map, a string tensor."""
        if _is_graph_tensor(inputs):
            return self._in_graph(inputs, self.detokenize, self._detokenize_batch)
        if hasattr(inputs, "to_list"):
            inputs = inputs.to_list()
        elif hasattr(inputs, "numpy"):
            inputs = inputs.numpy()
        if len(inputs) and np.ndim(inputs[0]) == 1:
            return [self.tokenizer.decode(np.asarray(ids).tolist()) for ids in inputs]
        return self.tokenizer.decode(np.asarray(inputs, np.int64).tolist())

    def _tokenize_batch(self, texts):
        """Ids of a batch of strings as a ragged tensor (inside a ``tf.data`` map)."""
        import tensorflow as tf

        def encode(values):
            rows = self.tokenize(values)
            flat = np.concatenate([np.asarray(r, np.int32) for r in rows] + [
                np.zeros(0, np.int32)])
            return flat, np.asarray([len(r) for r in rows], np.int64)

        flat, lengths = tf.numpy_function(encode, [texts], [tf.int32, tf.int64])
        return tf.RaggedTensor.from_row_lengths(tf.ensure_shape(flat, [None]),
                                                tf.ensure_shape(lengths, texts.shape))

    def _detokenize_batch(self, ids):
        """Texts of a batch of id rows, dense or ragged (inside a ``tf.data`` map)."""
        import tensorflow as tf

        if isinstance(ids, tf.RaggedTensor):
            def decode(flat, lengths):
                rows = np.split(flat, np.cumsum(lengths)[:-1]) if len(lengths) else []
                return np.asarray(self.detokenize(rows), dtype=object)

            texts = tf.numpy_function(decode, [ids.flat_values, ids.row_lengths()], tf.string)
        else:
            texts = tf.numpy_function(
                lambda rows: np.asarray(self.detokenize(list(rows)), dtype=object), [ids],
                tf.string)
        return tf.ensure_shape(texts, ids.shape[:1])

    def _in_graph(self, inputs, one, batch):
        """``one`` of a single string or id row, ``batch`` of a batch of them, inside a
        ``tf.data`` map (``tf.numpy_function`` of the Python tokenizer)."""
        import tensorflow as tf

        strings = inputs.dtype == tf.string
        rank = inputs.shape.rank
        if rank == (0 if strings else 1) and not isinstance(inputs, tf.RaggedTensor):
            out_type = tf.int32 if strings else tf.string
            single = tf.numpy_function(
                lambda value: np.asarray(one(value), dtype=np.int32 if strings else object),
                [inputs], out_type)
            return tf.ensure_shape(single, [None] if strings else [])
        if rank != (1 if strings else 2):
            raise ValueError(f"{self.name}: expected a string or a batch (rank 1) of strings, "
                             f"or ids of rank 1 or 2, got {inputs}")
        return batch(inputs)

    def vocabulary_size(self):
        return vocab.VOCAB_SIZE

    def get_vocabulary(self):
        return [self.tokenizer.id_to_token(i) or "" for i in range(vocab.VOCAB_SIZE)]

    def id_to_token(self, id):
        return self.tokenizer.id_to_token(id)

    def token_to_id(self, token):
        return self.tokenizer.token_to_id(token)

    def get_config(self):
        return {**super().get_config(), "engine": self.engine}
