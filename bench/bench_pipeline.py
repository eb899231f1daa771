"""Input pipeline vs model: tokens per second delivered by ``c4_dataset`` from pre-tokenised
shards and from raw ``.json.gz`` files (tokenised on the fly), side by side with the tokens
per second one training step of ``NeMoTConfig.preset("small")`` consumes on this machine.

The sample is C4-layout files made of the pages of Python's ``pydoc_data.topics`` (real
English documents of a few hundred to a few thousand tokens). Also reports the padding
that ``pack=True`` saves on that sample.
"""

import gzip
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import pydoc_data.topics

from nemot import vocab
from nemot.data import prepare

FILES = 4
WINDOW = 768          # thesis length for the pipeline
BATCH = 32            # thesis pre-training batch
SECONDS = 8.0         # per pipeline measurement
MODEL_BATCH = 8
MODEL_STEPS = 5


def _write_sample(directory):
    texts = [t for _, t in sorted(pydoc_data.topics.topics.items()) if len(t) > 200]
    directory.mkdir(parents=True)
    for k in range(FILES):
        order = np.random.default_rng(k).permutation(len(texts))
        with gzip.open(directory / f"c4-train.{k:05d}-of-01024.json.gz", "wt",
                       encoding="utf-8") as f:
            f.writelines(json.dumps({"text": texts[i]}) + "\n" for i in order)
    return len(texts) * FILES


def _rate(dataset):
    """Positions and non-pad tokens per second over ``SECONDS`` (after one warm-up batch)."""
    it = iter(dataset)
    next(it)
    start, batches, real = time.perf_counter(), 0, 0
    while time.perf_counter() - start < SECONDS:
        x, _ = next(it)
        batches += 1
        real += int(np.sum(x["token_ids"].numpy()[:, 3:] != vocab.PAD_ID))
    elapsed = time.perf_counter() - start
    return batches * BATCH * WINDOW / elapsed, real / elapsed


def _padding(shards, pack):
    from nemot.data.c4 import stream as c4

    kind, files = c4.list_files(shards)
    rows = list(c4.window_stream(kind, files, n=WINDOW, pack=pack, shuffle_buffer=0,
                                 repeat=False, order="directory"))
    pad = sum(int((x[3:] == vocab.PAD_ID).sum()) for x, _ in rows)
    return len(rows), pad / (len(rows) * WINDOW)


def _model_rate():
    import keras

    import nemot
    from nemot.models.losses import NeMoTLoss

    cfg = nemot.NeMoTConfig.preset("small")
    model = nemot.build_model(cfg)
    model.compile(optimizer=keras.optimizers.Adam(1e-4),
                  loss=NeMoTLoss(lm_weight=0.0, vanilla_weight=0.0))
    n = cfg.max_text_length
    rng = np.random.default_rng(0)
    text = rng.integers(0, vocab.GPT2_VOCAB_SIZE, (MODEL_BATCH, n + 1)).astype("int32")
    aux = np.tile([vocab.CLS_ID, vocab.DEC_ID, vocab.task_token_id("lm")], (MODEL_BATCH, 1))
    x = {"token_ids": np.concatenate([aux, text[:, :-1]], axis=1).astype("int32")}
    y = {"task_targets": text[:, 1:], "lm_targets": np.full((MODEL_BATCH, n), -1, "int32")}
    model.train_on_batch(x, y)  # compile
    start = time.perf_counter()
    for _ in range(MODEL_STEPS):
        model.train_on_batch(x, y)
    step = (time.perf_counter() - start) / MODEL_STEPS
    return {"config": "small", "max_text_length": n, "batch_size": MODEL_BATCH,
            "step_seconds": round(step, 3), "tokens_per_s": round(MODEL_BATCH * n / step)}


def run():
    from nemot.data.c4.pipeline import c4_dataset

    with tempfile.TemporaryDirectory() as tmp:
        raw, shards = Path(tmp) / "raw", Path(tmp) / "shards"
        documents = _write_sample(raw)
        summary = prepare.prepare_c4(raw, shards, workers=1, progress=False)
        kwargs = dict(batch_size=BATCH, max_text_length=WINDOW, window_index=None)
        shard_positions, shard_tokens = _rate(c4_dataset(shards, **kwargs))
        packed_positions, packed_tokens = _rate(c4_dataset(shards, pack=True, **kwargs))
        raw_positions, raw_tokens = _rate(c4_dataset(raw, **kwargs))
        windows, pad = _padding(shards, pack=False)
        packed_windows, packed_pad = _padding(shards, pack=True)
    model = _model_rate()
    result = {
        "sample": {"documents": documents, "tokens": summary["tokens"],
                   "mean_document_tokens": round(summary["tokens"] / documents)},
        "window": WINDOW, "batch_size": BATCH,
        "shards_positions_per_s": round(shard_positions),
        "shards_tokens_per_s": round(shard_tokens),
        "shards_packed_positions_per_s": round(packed_positions),
        "shards_packed_tokens_per_s": round(packed_tokens),
        "raw_positions_per_s": round(raw_positions),
        "raw_tokens_per_s": round(raw_tokens),
        "padding": {"windows": windows, "pad_fraction": round(pad, 4),
                    "packed_windows": packed_windows, "packed_pad_fraction": round(packed_pad, 4),
                    "windows_saved": round(1 - packed_windows / windows, 4)},
        "model_train_step": model,
    }
    result["shards_vs_model"] = round(shard_positions / model["tokens_per_s"], 1)
    result["raw_vs_model"] = round(raw_positions / model["tokens_per_s"], 1)
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
