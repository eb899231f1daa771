"""What a KerasHub user does with a causal LM works on nemot's as on GPT-2's: the
tokenizer in and out of ``tf.data``, presets and their dtype, checked inputs, user
metrics, LoRA and int8 quantization. One tiny NeMoT is built for the module."""

import keras
import keras_hub
import numpy as np
import pytest
import tensorflow as tf

from nemot.models.nemot_tokenizer import NeMoTTokenizer

TEXTS = ["Hello world", "<sep> yes </s>"]
# A GPT-2 byte-pair vocabulary small enough to build in memory ("Ġ" is a leading space).
GPT2_VOCABULARY = {"<|endoftext|>": 0, "H": 1, "e": 2, "l": 3, "o": 4, "Ġ": 5, "w": 6,
                   "r": 7, "d": 8, "y": 9, "s": 10, "<": 11, ">": 12, "p": 13, "/": 14,
                   "He": 15, "ll": 16, "Ġw": 17}
GPT2_MERGES = ["H e", "l l", "Ġ w"]


@pytest.fixture(scope="module")
def tokenizers():
    return NeMoTTokenizer(), keras_hub.models.GPT2Tokenizer(vocabulary=GPT2_VOCABULARY,
                                                             merges=GPT2_MERGES)


def test_the_tokenizer_round_trips_strings_and_batches_as_gpt2s(tokenizers):
    for tok in tokenizers:
        assert tok.detokenize(tok(TEXTS)) == TEXTS
        assert tok.detokenize(tok(TEXTS[0])) == TEXTS[0]
        one, batch = tok(TEXTS[0]), tok(TEXTS)
        assert isinstance(one, np.ndarray) and one.dtype == np.int32 and one.ndim == 1
        assert isinstance(batch, list) and list(one) == batch[0]
        assert tok.detokenize(tf.ragged.constant(batch)) == TEXTS


@pytest.mark.parametrize("batch", [None, 2])
def test_the_tokenizer_maps_over_a_dataset_as_gpt2s(tokenizers, batch):
    specs, texts = [], []
    for tok in tokenizers:
        data = tf.data.Dataset.from_tensor_slices(TEXTS + [""])
        data = data if batch is None else data.batch(batch)
        ids = data.map(tok)
        specs.append(ids.element_spec)
        decoded = [keras.tree.map_structure(bytes.decode, np.asarray(t).tolist())
                   for t in ids.map(tok.detokenize).as_numpy_iterator()]
        texts.append(decoded)
        eager = [tok(t) for t in data]
        for mapped, direct in zip(ids, eager):
            mapped = mapped.to_list() if batch else mapped.numpy().tolist()
            assert mapped == ([list(d) for d in direct] if batch else list(direct))
    assert specs[0] == specs[1]
    assert texts[0] == texts[1] == ([TEXTS[0], TEXTS[1], ""] if batch is None
                                    else [TEXTS, [""]])


def test_a_gpt2_preset_name_offline_says_offline(monkeypatch):
    import requests

    from nemot.models import gpt2

    def no_network(source):
        raise requests.ConnectionError("Failed to resolve 'api.kaggle.com'")

    monkeypatch.setattr(gpt2, "preset_config", no_network)
    with pytest.raises(ConnectionError, match="'gpt2_base_en'.*offline.*Hugging Face"):
        gpt2.gpt2_sizes("gpt2_base_en")
