"""What ``vanilla_attention_dropout = 0`` trades: a fine-tuning result at tiny size.

    python -m bench attention_dropout                 # 5 seeds, 300 steps each arm
    python -m bench attention_dropout --seeds 3 --steps 100

GPT-2's dropout of 0.1 on the vanilla set's attention probabilities keeps that set off the
fused (flash) attention kernel on a GPU; 0 puts it on. This measures what the switch
costs in learning: a tiny NeMoT (the ``tiny`` preset, dropout 0.1 everywhere else, the
``gqa`` block alone) fine-tuned from scratch on the synthetic span task of
:mod:`nemot.data.synthetic.qa` (copy the passage word the question names, two passage
words: copying either scores F1 0.5), once with the vanilla set's attention dropout at
0.1 and once at 0, from the same seed (the same initial weights, batches and other
dropout masks). The loss is the task term L1 alone and the vanilla head is not built,
as in the suite's learning proofs: the two 50,313-wide heads and the LM term would
triple a step's cost on a CPU and the task learns as fast without them. Reported per seed and as means: the held-out task loss (L1) every
``--every`` steps, and the held-out F1 of greedy answers at the end.

Writes ``bench/results/attention_dropout.json``. The arms' step times are not compared:
on a CPU both run the same unfused attention.
"""

import argparse
import statistics

import numpy as np

RATES = (0.1, 0.0)
TEXT_LENGTH = 10


def examples(tokenizer):
    from nemot.data import Formatter
    from nemot.data.synthetic import qa as synthetic

    fmt = Formatter(tokenizer, max_text_length=TEXT_LENGTH)
    return (fmt.format_batch(synthetic.span_examples(4000, seed=1, passage_words=2)),
            fmt.format_batch(synthetic.span_examples(200, seed=2, passage_words=2)))


def fine_tune(rate, seed, train, dev, tokenizer, steps, every, batch, learning_rate):
    """Held-out task losses every ``every`` steps and the final F1 of one run."""
    import keras

    import nemot
    from nemot.data.qa.pipelines import examples_dataset
    from nemot.evaluation.scoring import score_examples

    keras.utils.set_random_seed(seed)
    config = nemot.NeMoTConfig.preset("tiny").replace(
        max_text_length=TEXT_LENGTH, output_blocks=("gqa",), vanilla_head=False,
        vanilla_attention_dropout=rate)
    model = nemot.build_model(config)
    model.compile(keras.optimizers.Adam(learning_rate),
                  loss=nemot.NeMoTLoss(lm_weight=0, vanilla_weight=0), jit_compile=False)
    data = examples_dataset(train, batch_size=batch, max_text_length=TEXT_LENGTH, seed=seed)
    held_out = examples_dataset(dev, batch_size=batch, max_text_length=TEXT_LENGTH,
                                shuffle=False, repeat=False)
    losses = []
    for _ in range(steps // every):
        model.fit(data, epochs=1, steps_per_epoch=every, verbose=0)
        losses.append(round(model.evaluate(held_out, verbose=0, return_dict=True)["task_loss"], 4))
    f1 = score_examples(model, dev, "f1", label_mode=False, tokenizer=tokenizer,
                        max_new_tokens=3, jit_compile=False)
    return {"dev_task_loss": losses, "dev_f1": round(f1, 4)}


def summary(runs, key):
    values = [run[key] for run in runs]
    return {"mean": round(statistics.mean(values), 4),
            "stdev": round(statistics.stdev(values), 4) if len(values) > 1 else 0.0}


def run(argv=()):
    parser = argparse.ArgumentParser(prog="python -m bench attention_dropout",
                                     description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--every", type=int, default=50, help="steps between held-out losses")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--rate", type=float, default=3e-3, help="Adam's learning rate")
    args = parser.parse_args(list(argv))
    import keras

    from nemot.data import Tokenizer

    tokenizer = Tokenizer()
    train, dev = examples(tokenizer)
    arms = {str(rate): [] for rate in RATES}
    for seed in range(args.seeds):
        for rate in RATES:
            result = fine_tune(rate, seed, train, dev, tokenizer, args.steps, args.every,
                               args.batch, args.rate)
            arms[str(rate)].append(dict(result, seed=seed))
            print(f"   seed {seed} vanilla_attention_dropout={rate}: {result}", flush=True)
    means = {}
    for rate, runs in arms.items():
        for run_ in runs:
            run_["final_dev_task_loss"] = run_["dev_task_loss"][-1]
        means[rate] = {"dev_f1": summary(runs, "dev_f1"),
                       "final_dev_task_loss": summary(runs, "final_dev_task_loss"),
                       "dev_task_loss_by_step": [
                           round(float(np.mean(step)), 4)
                           for step in zip(*(run_["dev_task_loss"] for run_ in runs))]}
    paired = [b["dev_f1"] - a["dev_f1"] for a, b in zip(*arms.values())]
    return {"backend": keras.backend.backend(), "task": "synthetic span, 2 passage words",
            "preset": "tiny", "output_blocks": ["gqa"], "loss": "L1",
            "steps": args.steps, "every": args.every, "batch": args.batch,
            "learning_rate": args.rate, "seeds": args.seeds,
            "vanilla_attention_dropout": arms, "means": means,
            "dev_f1_difference_0_minus_0.1": {
                "per_seed": [round(d, 4) for d in paired],
                "mean": round(statistics.mean(paired), 4)}}
