"""Every reader with a hub path, offline: ``datasets.load_dataset`` (called only by
``nemot.data.raw.hub_rows``) is replaced by a ``datasets.Dataset`` built here with the hub
dataset's real column names and feature types, holding the same made-up content as
the raw fixture; the hub path must give the same examples as the raw files, so a
renamed column or a changed label encoding fails here."""

import datasets  # the optional extra `hub`, also in the `test` extra
import pytest

from nemot.data.qa import registry
from tests.data.fixtures import STORY

F, V, S = datasets.Features, datasets.Value, datasets.Sequence
STR = V("string")

_AI2_ROWS = lambda qid_prefix: {  # noqa: E731  (the raw fixture's two ARC questions)
    "id": [f"{qid_prefix}-1", f"{qid_prefix}-2"], "question": ["What do plants need?"] * 2,
    "choices": [{"text": ["sand", "light", "salt", "ice"], "label": list("ABCD")},
                {"text": ["sand", "light", "salt", "ice"], "label": list("1234")}],
    "answerKey": ["B", "3"]}
_SQUAD = F({"id": STR, "title": STR, "context": STR, "question": STR,
            "answers": S({"text": STR, "answer_start": V("int32")})})
_QUOREF_CONTEXT = "Traci and Gibson drive to Las Vegas. Ren\u00e9e stays home."

# name: (hub name, config, hub split, split, features, columns)
CASES = {
    "boolq": ("google/boolq", None, "validation", "dev",
              F({"question": STR, "answer": V("bool"), "passage": STR}),
              {"question": ["did the bean grow", "is the bean a rose"], "answer": [True, False],
               "passage": [STORY, STORY]}),
    "arc_easy": ("allenai/ai2_arc", "ARC-Easy", "test", "test",
                 F({"id": STR, "question": STR, "choices": S({"text": STR, "label": STR}),
                    "answerKey": STR}), _AI2_ROWS("Easy-Test")),
    "obqa": ("allenai/openbookqa", "main", "train", "train",
             F({"id": STR, "question_stem": STR, "choices": S({"text": STR, "label": STR}),
                "answerKey": STR}),
             {"id": ["o-train"], "question_stem": ["What do plants need?"],
              "choices": [{"text": ["sand", "light", "salt", "ice"], "label": list("ABCD")}],
              "answerKey": ["B"]}),
    "commonsenseqa": ("tau/commonsense_qa", None, "validation", "dev",
                      F({"id": STR, "question": STR, "question_concept": STR,
                         "choices": S({"label": STR, "text": STR}), "answerKey": STR}),
                      {"id": ["c2"], "question": ["Where is a bean kept?"], "question_concept": ["bean"],
                       "choices": [{"label": list("ABCDE"), "text": ["jar", "sky", "sea", "sun", "moon"]}],
                       "answerKey": ["A"]}),
    "race": ("ehovy/race", ("middle", "high"), "validation", "dev",
             F({"example_id": STR, "article": STR, "answer": STR, "question": STR,
                "options": S(STR)}),
             {"example_id": ["1.txt", "1.txt"], "article": [STORY, STORY], "answer": ["A", "B"],
              "question": ["What did Mia plant?", "When was it tall?"],
              "options": [["a bean", "a rose", "a tree", "a pea"], ["May", "June", "July", "April"]]}),
    "mctest": ("sagnikrayc/mctest", ("mc160", "mc500"), "validation", "dev",
               F({"idx": {"story": STR, "question": V("int64")}, "question": STR, "story": STR,
                  "properties": STR, "answer_options": {k: STR for k in "ABCD"}, "answer": STR}),
               {"idx": [{"story": "s", "question": i} for i in range(4)],
                "question": [f"{'one' if i % 2 == 0 else 'multiple'}: Question {i + 1}?"
                             for i in range(4)],
                "story": ["Mia had a bean.\\newlineIt\\tabgrew."] * 4, "properties": ["p"] * 4,
                "answer_options": [dict(zip("ABCD", ["red", "blue", "green", "gold"]))] * 4,
                "answer": list("ACDB")}),
    "piqa": ("ybisk/piqa", None, "validation", "valid",
             F({"goal": STR, "sol1": STR, "sol2": STR,
                "label": datasets.ClassLabel(names=["0", "1"])}),
             {"goal": ["Plant a bean.", "Water a bean."], "sol1": ["Put it in soil.", "Use sand."],
              "sol2": ["Put it in ice.", "Use a can."], "label": [0, 1]}),
    "siqa": ("allenai/social_i_qa", None, "validation", "dev",
             F({"context": STR, "question": STR, "answerA": STR, "answerB": STR, "answerC": STR,
                "label": STR}),
             {"context": ["Mia watered the bean."], "question": ["Why did Mia do this?"],
              "answerA": ["to help it grow"], "answerB": ["to sleep"], "answerC": ["to swim"],
              "label": ["1"]}),
    "winogrande": ("allenai/winogrande", "winogrande_m", "train", "train_m",
                   F({"sentence": STR, "option1": STR, "option2": STR, "answer": STR}),
                   {"sentence": ["The bean beat the rose because _ grew faster."] * 3,
                    "option1": ["the bean"] * 3, "option2": ["the rose"] * 3, "answer": ["1"] * 3}),
    "squad_v2": ("rajpurkar/squad_v2", None, "validation", "dev", _SQUAD,
                 {"id": ["q1", "q2"], "title": ["Bean"] * 2, "context": [STORY] * 2,
                  "question": ["What grew tall?", "Who ate the bean?"],
                  "answers": [{"text": ["a bean", "bean", "a bean"], "answer_start": [10, 12, 10]},
                              {"text": [], "answer_start": []}]}),
    "quoref": ("allenai/quoref", None, "validation", "dev",
               F({"id": STR, "question": STR, "context": STR, "title": STR, "url": STR,
                  "answers": S({"answer_start": V("int32"), "text": STR})}),
               {"id": ["q1", "q2"], "question": ["Who drives to Las Vegas?", "Who stays home?"],
                "context": [_QUOREF_CONTEXT] * 2, "title": ["Desert"] * 2, "url": ["u"] * 2,
                "answers": [{"answer_start": [0, 10], "text": ["Traci", "Gibson"]},
                            {"answer_start": [37], "text": ["Ren\u00e9e"]}]}),
    "ropes": ("allenai/ropes", None, "validation", "dev",
              F({"id": STR, "background": STR, "situation": STR, "question": STR,
                 "answers": S({"text": STR})}),
              {"id": ["q1", "q2"], "background": ["Beans grow in sun."] * 2,
               "situation": ["Mia's bean is in sun."] * 2,
               "question": ["What grew tall?", "Is Mia's bean in sun?"],
               "answers": [{"text": ["a bean", "bean"]}, {"text": ["yes"]}]}),
    "narrativeqa": ("deepmind/narrativeqa", None, "validation", "valid",
                    F({"document": {"id": STR, "kind": STR, "url": STR, "file_size": V("int32"),
                                    "word_count": V("int32"), "start": STR, "end": STR,
                                    "summary": {"text": STR, "tokens": S(STR), "url": STR,
                                                "title": STR}, "text": STR},
                       "question": {"text": STR, "tokens": S(STR)},
                       "answers": [{"text": STR, "tokens": S(STR)}]}),
                    {"document": [{"id": "doc2", "kind": "movie", "url": "u", "file_size": 1,
                                   "word_count": 1, "start": "", "end": "", "text": "",
                                   "summary": {"text": "A bean, grown.", "tokens": [], "url": "u",
                                               "title": "t"}}],
                     "question": [{"text": "What grew?", "tokens": ["what", "grew", "?"]}],
                     "answers": [[{"text": "a bean", "tokens": []}, {"text": "the bean", "tokens": []}]]}),
    "wikitext2": ("Salesforce/wikitext", "wikitext-2-v1", "test", "test", F({"text": STR}), None),
    "ptb": ("ptb-text-only/ptb_text_only", "penn_treebank", "validation", "valid",
            F({"sentence": STR}), {"sentence": ["the bean grew", "a rose fell"]}),
    "lambada": ("cimec/lambada", None, "test", "test", F({"text": STR, "domain": STR}),
                {"text": ["she said `` it isn't mine '' to him", "the end"], "domain": ["", ""]}),
}


def _wikitext_rows():
    # The hub's rows: each line of the file with its newline, blank lines as "".
    from tests.data.fixtures import WIKITEXT
    lines = WIKITEXT.split("\n")[:-1]
    return {"text": ["" if not line.strip() else line + "\n" for line in lines]}


def _fake_hub(monkeypatch, name, calls):
    hub_name, configs, hub_split, _, features, columns = CASES[name]
    columns = _wikitext_rows() if columns is None else columns

    def load_dataset(path, config=None, split=None):
        calls.append((path, config, split))
        assert path == hub_name and split == hub_split
        assert config in (configs if isinstance(configs, tuple) else (configs,))
        return datasets.Dataset.from_dict(columns, features=features)

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)


def _content(item):
    if isinstance(item, str):
        return item
    return (item.question, item.passage, item.options, item.answers, item.label, item.subset)


@pytest.mark.parametrize("name", sorted(CASES))
def test_hub_rows_give_the_raw_files_examples(name, monkeypatch, raw_dirs):
    calls = []
    _fake_hub(monkeypatch, name, calls)
    split = CASES[name][3]
    from_hub = registry.load_examples(name, split, data_dir=None, expand=False)
    assert calls, "the hub loader was not called"
    raw = registry.load_examples(name, split, raw_dirs[name], expand=False)
    if name in ("race", "mctest"):  # the fake serves one subset's rows for each config
        raw = [e for e in raw if e.subset == raw[0].subset]
        from_hub = from_hub[:len(raw)]
    if name == "ptb":  # the hub strips the lines; the file is rebuilt as " sentence \n" lines
        raw = registry.load_examples(name, split, raw_dirs[name])
    assert [_content(e) for e in from_hub] == [_content(e) for e in raw]
    assert all(getattr(e, "dataset", name) == name for e in from_hub)


def test_hub_labels_follow_each_datasets_encoding(monkeypatch):
    # PIQA's ClassLabel 0/1 (-1 unlabelled), SIQA's strings "1"-"3", WinoGrande's "1"/"2".
    calls = []
    _fake_hub(monkeypatch, "piqa", calls)
    assert [e.label for e in registry.load_examples("piqa", "dev", None)] == [0, 1]
    _fake_hub(monkeypatch, "siqa", calls)
    assert [e.label for e in registry.load_examples("siqa", "dev", None)] == [0]
    _fake_hub(monkeypatch, "winogrande", calls)
    assert [e.label for e in registry.load_examples("winogrande", "train_m", None)] == [0, 0, 0]
    assert ("allenai/winogrande", "winogrande_m", "train") in calls


def test_missing_datasets_package_is_a_clear_error(monkeypatch):
    import builtins
    real_import = builtins.__import__

    def no_datasets(name, *args, **kwargs):
        if name == "datasets":
            raise ImportError("No module named 'datasets'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_datasets)
    with pytest.raises(ImportError, match=r"pip install 'nemot\[hub\]'.*pass data_dir="):
        registry.load_examples("boolq", "dev", None)
