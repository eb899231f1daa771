import pytest

from nemot.data import Formatter, QAExample, expand_answers, truncate
from nemot.vocab import ADDED_TOKEN_IDS as ADDED, IGNORE_ID

CLS, DEC, ENC, SEP, END = (ADDED[t] for t in ("<cls>", "<dec>", "<enc>", "<sep>", "</s>"))
P1, Q, MQA, GQA, LM = (ADDED[t] for t in ("<p1>", "<q>", "<mqa>", "<gqa>", "<lm>"))
OPT1, OPT2 = ADDED["(1)"], ADDED["(2)"]
X = IGNORE_ID


@pytest.fixture(scope="module")
def ids(tok):
    return lambda text: tok.encode(text)


def gqa(**kw):
    return QAExample(**{"id": "g", "passage": "Sun.", "question": "What?", "answers": ("light",),
                        "task": "gqa", **kw})


def mqa(**kw):
    return QAExample(**{"id": "m", "passage": "Sun.", "question": "What?", "options": ("dark", "light"),
                        "answers": ("light",), "label": 1, "task": "mqa", **kw})


def test_generation_layout_and_targets(tok, ids):
    f = Formatter(tok, max_text_length=32).format(gqa())
    assert f.text == "<p1> Sun. <q> What? <sep> light </s>"
    sun, what, light = ids("Sun."), ids("What?"), ids("light")
    assert len(light) == 1
    text = [P1] + sun + [Q] + what + [SEP] + light + [END]
    assert f.token_ids == [CLS, DEC, GQA] + text
    sep = text.index(SEP)
    # From <sep>: every answer token and </s>; nothing else counts.
    assert f.task_targets == [X] * sep + light + [END, X]
    # L2 reads the whole input, answer included.
    assert f.lm_targets == text[1:] + [X]
    assert f.prompt_ids == [CLS, DEC, GQA] + text[:sep + 1]
    assert f.golds == ("light",)


def test_label_mode_mqa_single_target_and_no_label_in_lm(tok, ids):
    f = Formatter(tok, max_text_length=32).format(mqa())
    assert f.text == "<p1> Sun. <q> What? (1) dark (2) light <sep> (2)"
    text = [P1] + ids("Sun.") + [Q] + ids("What?") + [OPT1] + ids("dark") + [OPT2] + ids("light") + [SEP, OPT2]
    assert f.token_ids == [CLS, DEC, MQA] + text
    sep = len(text) - 2
    assert f.task_targets == [X] * sep + [OPT2, X]
    assert f.lm_targets == text[1:sep + 1] + [X, X]
    assert f.golds == ("(2)",) and f.label == 1


def test_generate_mode_mqa_and_parameters(tok, ids):
    f = Formatter(tok, max_text_length=32, mode="enc", task_token="lm", mqa_mode="generate").format(mqa())
    assert f.token_ids[:3] == [CLS, ENC, LM]
    assert f.text.endswith("<sep> light </s>")
    assert [t for t in f.task_targets if t != X] == ids("light") + [END]
    assert f.golds == ("light",) and f.task == "lm"


def test_no_passage_starts_at_question_and_unanswerable_is_end_only(tok, ids):
    f = Formatter(tok, max_text_length=32).format(gqa(passage=None, answers=()))
    assert f.text == "<q> What? <sep> </s>"
    assert f.token_ids[3:] == [Q] + ids("What?") + [SEP, END]
    assert [t for t in f.task_targets if t != X] == [END]
    assert f.golds == ("",)


def test_training_truncation_keeps_first_and_last_tokens(tok, ids):
    passage = " ".join(f"w{i}" for i in range(60))
    f = Formatter(tok, max_text_length=32).format(gqa(passage=passage))
    full = [P1] + ids(passage) + [Q] + ids("What?") + [SEP] + ids("light") + [END]
    assert len(full) > 32
    text = f.token_ids[3:]
    assert text == [P1] + full[-31:]
    assert len(f.task_targets) == len(f.lm_targets) == 32
    assert [t for t in f.task_targets if t != X] == ids("light") + [END]
    # Position 0 predicts the first surviving token, not the dropped one.
    assert f.lm_targets[0] == full[-31]


def test_evaluation_prompt_leaves_room_for_the_answer(tok, ids):
    passage = " ".join(f"w{i}" for i in range(60))
    f = Formatter(tok, max_text_length=32, max_answer_length=5).format(gqa(passage=passage))
    prompt = [P1] + ids(passage) + [Q] + ids("What?") + [SEP]
    assert f.prompt_ids == [CLS, DEC, GQA, P1] + prompt[-26:]
    assert len(f.prompt_ids) - 3 + 5 == 32
    label = Formatter(tok, max_text_length=32).format(mqa(passage=passage))
    assert len(label.prompt_ids) - 3 == 31 and label.prompt_ids[-1] == SEP


def test_truncate_and_expand_answers():
    assert truncate(list(range(10)), 4, list("abcdefghij")) == ([0, 7, 8, 9], ["a", "h", "i", "j"])
    assert truncate([1, 2], 4) == ([1, 2],)
    expanded = list(expand_answers([gqa(answers=("a", "b")), mqa()]))
    assert [(e.id, e.target_answer, e.answers) for e in expanded] == [
        ("g#0", "a", ("a", "b")), ("g#1", "b", ("a", "b")), ("m", "light", ("light",))]


def test_format_batch_equals_format(tok):
    fmt = Formatter(tok, max_text_length=32)
    examples = [gqa(), mqa(), gqa(passage=None)]
    assert fmt.format_batch(examples) == [fmt.format(e) for e in examples]


def test_invalid_parameters_and_examples(tok):
    with pytest.raises(ValueError, match="mode"):
        Formatter(tok, mode="both")
    with pytest.raises(ValueError, match="no task token"):
        Formatter(tok, task_token="nope")
    with pytest.raises(ValueError, match="label 2 outside"):
        mqa(label=2)


def test_multi_part_answer_is_one_target_and_one_gold(tok):
    ex = gqa(answers=(("Traci", " Gibson"), "Traci"))
    f = Formatter(tok, max_text_length=32).format(ex)
    assert f.text == "<p1> Sun. <q> What? <sep> Traci, Gibson </s>"
    assert f.golds == (("Traci", "Gibson"), "Traci")
    expanded = list(expand_answers([ex]))
    assert [e.target_answer for e in expanded] == ["Traci, Gibson", "Traci"]
    assert all(e.group is None for e in expanded)
    grouped = list(expand_answers([ex], one_per_epoch=True))
    assert [e.group for e in grouped] == ["g", "g"]
    with pytest.raises(ValueError, match="non-empty tuple of string parts"):
        gqa(answers=((),))
