"""Tiny made-up files in the raw layout of every dataset (never copies of the real data).

``write_all(root)`` writes every dataset under ``root/<registry name>/`` and
returns ``{name: directory}``; ``write_c4(directory, ...)`` writes C4-layout files.
"""

import csv
import gzip
import json
from pathlib import Path

STORY = "Mia planted a bean. It grew tall by June."


def _json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj), encoding="utf-8")


def _jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _text(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def race(d):
    for split in ("train", "dev", "test"):
        for subset in ("middle", "high"):
            _json(d / split / subset / "1.txt", {
                "id": f"{subset}1.txt", "article": STORY,
                "questions": ["What did Mia plant?", "When was it tall?"],
                "options": [["a bean", "a rose", "a tree", "a pea"], ["May", "June", "July", "April"]],
                "answers": ["A", "B"]})


def _squad_doc(context_fields, question_id="q"):
    return {"version": "v2.0", "data": [{"title": "Bean", "paragraphs": [dict(context_fields, qas=[
        {"id": f"{question_id}1", "question": "What grew tall?",
         "answers": [{"text": "a bean", "answer_start": 10}, {"text": "bean", "answer_start": 12}],
         "is_impossible": False},
        {"id": f"{question_id}2", "question": "Who ate the bean?", "answers": [],
         "is_impossible": True}])]}]}


def squad_v2(d):
    for name in ("train-v2.0.json", "dev-v2.0.json"):
        _json(d / name, _squad_doc({"context": STORY}))


def quoref(d):
    for name in ("quoref-train-v0.1.json", "quoref-dev-v0.1.json"):
        _json(d / name, _squad_doc({"context": STORY}))


def quoref_contrast(d):
    _json(d / "quoref_test_perturbations_20191206_merged.json", _squad_doc({"context": STORY}, "c"))


def _ropes_fields():
    return {"background": "Beans grow in sun.", "situation": "Mia's bean is in sun."}


def ropes(d):
    for name in ("train-v1.0.json", "dev-v1.0.json"):
        _json(d / name, _squad_doc(_ropes_fields()))


def ropes_contrast(d):
    _json(d / "data" / "ropes_contrast_set_032820.json", _squad_doc(_ropes_fields(), "c"))


def narrativeqa(d):
    d.mkdir(parents=True, exist_ok=True)
    rows = [("doc1", "train", "Who planted?", "Mia", "Mia did"),
            ("doc2", "valid", "What grew?", "a bean", "the bean"),
            ("doc2", "test", "When?", "June", "in June")]
    with open(d / "qaps.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["document_id", "set", "question", "answer1", "answer2",
                         "question_tokenized", "answer1_tokenized", "answer2_tokenized"])
        for row in rows:
            writer.writerow(list(row) + [row[2].lower(), row[3].lower(), row[4].lower()])
    (d / "third_party/wikipedia").mkdir(parents=True)
    with open(d / "third_party/wikipedia/summaries.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(["document_id", "set", "summary", "summary_tokenized"])
        writer.writerow(["doc1", "train", STORY, STORY.lower()])
        writer.writerow(["doc2", "valid", "A bean, grown.", "a bean , grown ."])
        writer.writerow(["doc2", "test", "A bean, grown.", "a bean , grown ."])


def boolq(d):
    for split in ("train", "dev"):
        _jsonl(d / f"{split}.jsonl", [
            {"question": "did the bean grow", "title": "Bean", "answer": True, "passage": STORY},
            {"question": "is the bean a rose", "title": "Bean", "answer": False, "passage": STORY}])


def boolq_cs(d):
    _json(d / "boolq_perturbed.json", {"data": [
        {"title": "Title", "paragraph": "Paragraph", "question": "Question", "answer": "Gold Answer",
         "perturbed_questions": [{"perturbed_q": "Perturbed Q", "answer": "New Answer"}]},
        {"title": "Bean", "paragraph": STORY, "question": "did the bean grow", "answer": "TRUE",
         "perturbed_questions": [{"perturbed_q": "did the bean shrink", "answer": "FALSE"},
                                 {"perturbed_q": "", "answer": ""}]}]})


def _ai2(qid, labels, key):
    return {"id": qid, "answerKey": key, "question": {"stem": "What do plants need?", "choices": [
        {"label": lab, "text": txt} for lab, txt in zip(labels, ["sand", "light", "salt", "ice"])]}}


def arc(d):
    for part in ("Easy", "Challenge"):
        for split in ("Train", "Dev", "Test"):
            _jsonl(d / f"ARC-{part}" / f"ARC-{part}-{split}.jsonl",
                   [_ai2(f"{part}-{split}-1", "ABCD", "B"), _ai2(f"{part}-{split}-2", "1234", "3")])


def obqa(d):
    for split in ("train", "dev", "test"):
        _jsonl(d / "Data/Main" / f"{split}.jsonl", [_ai2(f"o-{split}", "ABCD", "B")])


def commonsenseqa(d):
    five = lambda qid, key: dict(_ai2(qid, "ABCD", key), question={  # noqa: E731
        "stem": "Where is a bean kept?", "question_concept": "bean", "choices": [
            {"label": lab, "text": txt} for lab, txt in zip("ABCDE", ["jar", "sky", "sea", "sun", "moon"])]})
    _jsonl(d / "train_rand_split.jsonl", [five("c1", "A")])
    _jsonl(d / "dev_rand_split.jsonl", [five("c2", "A")])
    test = five("c3", "A")
    del test["answerKey"]
    _jsonl(d / "test_rand_split_no_answers.jsonl", [test])


def mctest(d):
    d.mkdir(parents=True, exist_ok=True)
    questions = []
    for i in range(4):
        prefix = "one" if i % 2 == 0 else "multiple"
        questions += [f"{prefix}: Question {i + 1}?", "red", "blue", "green", "gold"]
    row = ["mc160.dev.0", "Author: x;Work Time(s): 1", "Mia had a bean.\\newlineIt\\tabgrew."]
    for subset in ("mc160", "mc500"):
        for split in ("train", "dev", "test"):
            _text(d / f"{subset}.{split}.tsv", "\t".join(row + questions) + "\n")
            _text(d / f"{subset}.{split}.ans", "A\tC\tD\tB\n")


def piqa(d):
    records = [{"id": "p1", "goal": "Plant a bean.", "sol1": "Put it in soil.", "sol2": "Put it in ice."},
               {"id": "p2", "goal": "Water a bean.", "sol1": "Use sand.", "sol2": "Use a can."}]
    for split in ("train", "valid"):
        _jsonl(d / f"{split}.jsonl", records)
        _text(d / f"{split}-labels.lst", "0\n1\n")
    _jsonl(d / "tests.jsonl", records)


def siqa(d):
    record = {"context": "Mia watered the bean.", "question": "Why did Mia do this?",
              "answerA": "to help it grow", "answerB": "to sleep", "answerC": "to swim"}
    for split in ("train", "dev"):
        _jsonl(d / f"{split}.jsonl", [record])
        _text(d / f"{split}-labels.lst", "1\n")


def winogrande(d):
    record = {"qID": "w1", "sentence": "The bean beat the rose because _ grew faster.",
              "option1": "the bean", "option2": "the rose", "answer": "1"}
    _jsonl(d / "train_xl.jsonl", [record])
    _jsonl(d / "dev.jsonl", [dict(record, qID="w2", answer="2")])
    _jsonl(d / "test.jsonl", [dict(record, qID="w3", answer="")])


def _drop_doc():
    return {"nfl_1": {"passage": STORY, "qa_pairs": [
        {"query_id": "d1", "question": "How many beans?",
         "answer": {"number": "1", "date": {"day": "", "month": "", "year": ""}, "spans": []},
         "validated_answers": [{"number": "", "date": {"day": "", "month": "", "year": ""},
                                "spans": ["one"]}]},
        {"query_id": "d2", "question": "When was it tall?",
         "answer": {"number": "", "date": {"day": "", "month": "June", "year": "2020"}, "spans": []}}]}}


def drop(d):
    for name in ("drop_dataset_train.json", "drop_dataset_dev.json"):
        _json(d / name, _drop_doc())


def drop_contrast(d):
    _json(d / "drop_contrast_sets_test.json", _drop_doc())


WIKITEXT = (" \n = Bean = \n \n The bean is a <unk> seed . \n \n = = Growth = = \n \n"
            " It grows in sun . \n \n = Rose = \n \n A rose is red . \n")


def wikitext(d):
    for split in ("train", "valid", "test"):
        _text(d / f"wiki.{split}.tokens", WIKITEXT)


def ptb(d):
    for split in ("train", "valid", "test"):
        _text(d / f"ptb.{split}.txt", " the bean grew \n a rose fell \n")


def lambada(d):
    for name in ("test", "development"):
        _text(d / f"lambada_{name}_plain_text.txt", "she said `` it isn't mine '' to him\nthe end\n")


WRITERS = {"race": race, "squad_v2": squad_v2, "narrativeqa": narrativeqa, "boolq": boolq,
           "boolq_cs": boolq_cs, "arc_easy": arc, "arc_challenge": arc, "obqa": obqa,
           "commonsenseqa": commonsenseqa, "mctest": mctest, "piqa": piqa, "siqa": siqa,
           "winogrande": winogrande, "quoref": quoref, "quoref_contrast": quoref_contrast,
           "ropes": ropes, "ropes_contrast": ropes_contrast, "drop": drop,
           "drop_contrast": drop_contrast, "wikitext2": wikitext, "wikitext103": wikitext,
           "ptb": ptb, "lambada": lambada}


def write_all(root):
    """Write every dataset's fixture under ``root/<name>``; returns ``{name: directory}``."""
    dirs = {}
    for name, writer in WRITERS.items():
        dirs[name] = Path(root) / name
        writer(dirs[name])
    return dirs


C4_DOCS = ["The bean grew tall.\nIt was June.", "Ünïcode — and newlines\n\nhere.", "Short."]


def write_c4(directory, n_train=3, docs_per_file=3):
    """C4 ``en`` layout: gzip JSON lines with ``text``; returns ``{file name: [texts]}``."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    names = [f"c4-train.{i:05d}-of-01024.json.gz" for i in range(n_train)]
    names.append("c4-validation.00000-of-00008.json.gz")
    for k, name in enumerate(names):
        texts = [f"{C4_DOCS[(k + j) % len(C4_DOCS)]} (file {k}, doc {j})"
                 for j in range(docs_per_file)]
        with gzip.open(directory / name, "wt", encoding="utf-8") as f:
            for text in texts:
                f.write(json.dumps({"text": text, "timestamp": "2019-04-25T12:57:54Z",
                                    "url": "https://example.com"}) + "\n")
        written[name] = texts
    return written
