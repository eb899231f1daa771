"""What is trained on after ``<sep>``: NarrativeQA's one answer per question and
epoch, and the same label layout for every answer whatever whitespace it came with."""

import itertools

from nemot import vocab
from nemot.data import Formatter, QAExample, expand_answers
from nemot.data.qa import registry
from nemot.data.qa.pipelines import epoch_length, eval_examples, examples_dataset

N = 32


def _questions(count=6):
    return [QAExample(id=f"n{i}", passage="Mia grew a bean.", question=f"Question {i}?",
                      answers=(f"first {i}", f"second {i}"), task="gqa", dataset="narrativeqa")
            for i in range(count)]


def _answers(ds, batches, tok):
    """The decoded answer of every row, in order."""
    out = []
    for x, _ in itertools.islice(ds, batches):
        for row in x["token_ids"].numpy():
            text = row[3:].tolist()
            sep, end = text.index(vocab.SEP_ID), text.index(vocab.END_ID)
            out.append(tok.decode(text[sep + 1:end]).strip())
    return out


def test_narrativeqa_trains_one_answer_per_question_and_epoch(tok):
    formatted = Formatter(tok, max_text_length=N).format_batch(
        list(expand_answers(_questions(), one_per_epoch=True)))
    assert len(formatted) == 12 and epoch_length(formatted) == 6
    ds = lambda **kw: examples_dataset(formatted, batch_size=6, max_text_length=N, **kw)  # noqa: E731
    answers = _answers(ds(seed=0), 20, tok)   # 20 epochs of 6 questions
    epochs = [answers[6 * e:6 * e + 6] for e in range(20)]
    for epoch in epochs:
        assert sorted(a.split()[1] for a in epoch) == [str(i) for i in range(6)]  # each once
    # Over the epochs every question is trained on with both of its answers, at random.
    for i in range(6):
        picked = {a.split()[0] for epoch in epochs for a in epoch if a.endswith(f" {i}")}
        assert picked == {"first", "second"}
    assert len({tuple(sorted(e)) for e in epochs}) > 1
    # Seeded by (seed, epoch, question): the same stream again, resumable, another seed differs.
    assert _answers(ds(seed=0), 20, tok) == answers
    assert _answers(ds(seed=0, start_batch=7), 13, tok) == answers[42:]
    assert _answers(ds(seed=1), 20, tok) != answers


def test_narrativeqa_registry_groups_training_answers_and_validates_on_both(raw_dirs, tok):
    train = registry.load_examples("narrativeqa", "train", raw_dirs["narrativeqa"])
    assert {e.group for e in train} == {train[0].id.rpartition("#")[0]}
    squad = registry.load_examples("squad_v2", "train", raw_dirs["squad_v2"])
    assert all(e.group is None for e in squad)  # SQuAD trains on every listed answer
    (valid,) = eval_examples("narrativeqa", "dev", data_dir=raw_dirs["narrativeqa"],
                             max_text_length=N, tokenizer=tok)
    assert valid.golds == ("a bean", "the bean")


def test_answers_are_stripped_so_the_label_layout_is_the_same(tok):
    fmt = Formatter(tok, max_text_length=N)
    plain = fmt.format(QAExample(id="a", question="Who?", answers=("Tom",)))
    after_sep = lambda f: f.token_ids[f.token_ids.index(vocab.SEP_ID) + 1:]  # noqa: E731
    for answer in (" Tom", "\nTom", "Tom \n"):
        f = fmt.format(QAExample(id="b", question="Who?", answers=(answer,)))
        assert after_sep(f) == after_sep(plain) == tok.encode("Tom") + [vocab.END_ID]
        assert f.golds == ("Tom",)
    option = fmt.__class__(tok, max_text_length=N, mqa_mode="generate").format(
        QAExample(id="c", question="Who?", options=(" Ann", " Tom"), answers=(" Tom",), label=1,
                  task="mqa"))
    assert after_sep(option) == tok.encode("Tom") + [vocab.END_ID]
