"""T5's text-to-text strings for GLUE and SuperGLUE, and the candidate readout."""

import numpy as np
import pytest

from nemot.data.benchmarks import superglue, text_to_text
from nemot.data.benchmarks.glue import GlueExample
from nemot.evaluation.benchmarks import score_superglue
from tests.data.superglue_records import RECORDS, write_jsonl


def glue_ex(task, label, **fields):
    return text_to_text.glue_example(GlueExample(task, fields, label, "dev.tsv", 2))


def test_glue_inputs_and_targets_follow_t5():
    mnli = glue_ex("MNLI", 2, premise="P.", hypothesis="H.")
    assert mnli.inputs == "mnli hypothesis: H. premise: P."  # fields sorted by name
    assert mnli.targets == ("contradiction",)
    assert mnli.candidates == ("entailment", "neutral", "contradiction")
    assert glue_ex("MNLI-mm", 0, premise="P.", hypothesis="H.").task == "glue/MNLI"
    assert glue_ex("CoLA", 0, sentence="S.").targets == ("unacceptable",)
    qqp = glue_ex("QQP", 1, question1="A?", question2="B?")
    assert (qqp.inputs, qqp.targets) == ("qqp question1: A? question2: B?", ("duplicate",))
    stsb = glue_ex("STS-B", 3.875, sentence1="A.", sentence2="B.")
    assert stsb.inputs == "stsb sentence1: A. sentence2: B."
    assert stsb.targets == ("3.8",) and stsb.label == 3.875  # rounded to 0.2 for the target only
    assert len(stsb.candidates) == 26 and stsb.candidates[:3] == ("0.0", "0.2", "0.4")


@pytest.fixture(scope="module")
def sg(tmp_path_factory):
    directory = tmp_path_factory.mktemp("superglue")
    out = {}
    for task, records in RECORDS.items():
        data = superglue.read_task(task, write_jsonl(directory / task / "val.jsonl", records))
        out[task] = (data, text_to_text.superglue_examples(data))
    return out


def test_superglue_inputs_and_targets_follow_t5(sg):
    data, examples = sg["COPA"]
    assert len(examples) == 2 and examples[0].rows == (0, 1)  # one example per question
    assert examples[0].inputs == ("copa choice1: He dropped a hammer on his foot. choice2: He got "
                                  "a hole in his sock. premise: The man broke his toe. question: "
                                  "cause")
    assert examples[1].targets == ("choice2",)
    _, examples = sg["MultiRC"]
    assert examples[0].inputs == ("multirc question: What does Tom have? answer: A dog "
                                  "paragraph: Sent 1: Tom has a dog. Sent 2: The dog is old. ")
    _, examples = sg["ReCoRD"]
    assert examples[0].inputs == ("record query: @placeholder is a city entities: Paris, France, "
                                  "U.S. passage: Paris is in France. @highlight U.S. visits Paris")
    assert examples[0].targets == ("Paris",) and examples[0].candidates[0] == "Paris"
    _, examples = sg["CB"]
    assert examples[0].inputs == "cb hypothesis: It was wet. premise: It rained all day."
    assert examples[0].targets == ("entailment",)
    _, examples = sg["WiC"]
    assert examples[0].inputs == ("wic sentence1: He sat on the bank. sentence2: The bank lent "
                                  "money. word: bank")
    assert text_to_text.record_passage("A won.\n@highlight\nB lost\n@highlight\nC") == \
        "A won. B lost. C"


def test_candidate_probabilities_become_the_rows_score_superglue_reads(sg):
    """Putting all mass on each example's gold target scores 100% on every task."""
    for task, (data, examples) in sg.items():
        gold = [np.array([float(c == e.targets[0]) for c in e.candidates]) for e in examples]
        p = text_to_text.row_probabilities(task, examples, gold, len(data.rows))
        assert all(v == 1.0 for v in score_superglue(task, data.rows, p).values()), task
        wrong = [1.0 - g if len(g) == 2 else np.roll(g, 1) for g in gold]
        p = text_to_text.row_probabilities(task, examples, wrong, len(data.rows))
        assert score_superglue(task, data.rows, p)[("f1a" if task == "MultiRC" else
                                               "f1" if task in ("CB", "ReCoRD") else "acc")] < 1
