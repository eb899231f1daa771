"""Tiny made-up files in the layout each dataset's authors publish (never copies of the data).

Every writer lays its files out as the download unpacks (top folder, file names,
field names and order, nesting, separate label files, JSON style, encodings) with
our own made-up text; the comments name the download. ``write_all(root)`` writes
every dataset under ``root/<registry name>/`` (the folder a user points
``data_dir`` at, holding the archive's top folder) and returns ``{name: directory}``;
``write_c4(directory, ...)`` writes C4-layout files.
"""

import csv
import gzip
import json
from pathlib import Path

STORY = "Mia planted a bean. It grew tall by June."
_DATE = {"day": "", "month": "", "year": ""}


def _json(path, obj, **dump):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, **dump), encoding="utf-8")


def _jsonl(path, records):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def _text(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def race(d):
    """``RACE.tar.gz`` -> ``RACE/{train,dev,test}/{middle,high}/<n>.txt``, one JSON object each."""
    for split in ("train", "dev", "test"):
        for subset in ("middle", "high"):
            _json(d / "RACE" / split / subset / "1.txt", {
                "answers": ["A", "B"],
                "options": [["a bean", "a rose", "a tree", "a pea"], ["May", "June", "July", "April"]],
                "questions": ["What did Mia plant?", "When was it tall?"],
                "article": STORY, "id": f"{subset}1.txt"})


def _squad_doc(context_fields, question_id="q", version="v2.0"):
    return {"version": version, "data": [{"title": "Bean", "paragraphs": [dict(qas=[
        {"question": "What grew tall?", "id": f"{question_id}1",
         "answers": [{"text": "a bean", "answer_start": 10}, {"text": "bean", "answer_start": 12},
                     {"text": "a bean", "answer_start": 10}],
         "is_impossible": False},
        {"plausible_answers": [{"text": "Mia", "answer_start": 0}], "question": "Who ate the bean?",
         "id": f"{question_id}2", "answers": [], "is_impossible": True}], **context_fields)]}]}


def squad_v2(d):
    """``train-v2.0.json``, ``dev-v2.0.json`` (downloaded one by one, no folder)."""
    for name in ("train-v2.0.json", "dev-v2.0.json"):
        _json(d / name, _squad_doc({"context": STORY}))


def _quoref_doc(question_id):
    # One question whose answer is two spans, one single-span question; unicode context.
    context = "Traci and Gibson drive to Las Vegas. Ren\u00e9e stays home."
    return {"data": [{"title": "Desert", "url": "https://en.wikipedia.org/wiki/Desert",
                      "paragraphs": [{"qas": [
                          {"question": "Who drives to Las Vegas?", "id": f"{question_id}1",
                           "answers": [{"text": "Traci", "answer_start": 0},
                                       {"text": "Gibson", "answer_start": 10}]},
                          {"question": "Who stays home?", "id": f"{question_id}2",
                           "answers": [{"text": "Ren\u00e9e", "answer_start": 37}]}],
                          "context": context, "context_id": "c0"}]}]}


def quoref(d):
    """``quoref-train-dev-v0.1.zip`` -> ``quoref-train-dev-v0.1/quoref-{train,dev}-v0.1.json``."""
    for name in ("quoref-train-v0.1.json", "quoref-dev-v0.1.json"):
        _json(d / "quoref-train-dev-v0.1" / name, _quoref_doc("q"))


def quoref_contrast(d):
    """allenai/contrast-sets ``quoref/quoref_test_perturbations_20191206_merged.json``
    (indented by 2, with ``original_id``)."""
    doc = _quoref_doc("c")
    for qa in doc["data"][0]["paragraphs"][0]["qas"]:
        qa["original_id"] = "o" + qa["id"]
    _json(d / "quoref" / "quoref_test_perturbations_20191206_merged.json", doc, indent=2)


def _ropes_doc(question_id):
    # ROPES answers carry no answer_start.
    return {"version": "1.0", "data": [{"title": "ropes", "paragraphs": [{
        "background": "Beans grow in sun.", "situation": "Mia's bean is in sun.",
        "qas": [{"question": "What grew tall?", "answers": [{"text": "a bean"}, {"text": "bean"}],
                 "id": f"{question_id}1"},
                {"question": "Is Mia's bean in sun?", "answers": [{"text": "yes"}],
                 "id": f"{question_id}2"}]}]}]}


def ropes(d):
    """``ropes-train-dev-v1.0.tar.gz`` -> ``ropes-train-dev-v1.0/{train,dev}-v1.0.json``."""
    for name in ("train-v1.0.json", "dev-v1.0.json"):
        _json(d / "ropes-train-dev-v1.0" / name, _ropes_doc("q"))


def ropes_contrast(d):
    """allenai/contrast-sets ``ropes/data/ropes_contrast_set_032820.json`` (and the
    ``..._original_...`` file beside it, which is not the contrast set)."""
    _json(d / "ropes" / "data" / "ropes_contrast_set_032820.json", _ropes_doc("c"))
    _json(d / "ropes" / "data" / "ropes_contrast_set_original_032820.json", _ropes_doc("o"))


def narrativeqa(d):
    """The repository zip -> ``narrativeqa-master/qaps.csv`` and
    ``narrativeqa-master/third_party/wikipedia/summaries.csv`` (quoted, multi-line fields)."""
    d = d / "narrativeqa-master"
    d.mkdir(parents=True, exist_ok=True)
    rows = [("doc1", "train", "Who planted?", "Mia", "Mia did"),
            ("doc2", "valid", "What grew?", "a bean", "the bean"),
            ("doc2", "test", "When?", "June", "in June")]
    with open(d / "qaps.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["document_id", "set", "question", "answer1", "answer2",
                         "question_tokenized", "answer1_tokenized", "answer2_tokenized"])
        for row in rows:
            writer.writerow(list(row) + [row[2].lower(), row[3].lower(), row[4].lower()])
    (d / "third_party/wikipedia").mkdir(parents=True)
    with open(d / "third_party/wikipedia/summaries.csv", "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f, lineterminator="\n")
        writer.writerow(["document_id", "set", "summary", "summary_tokenized"])
        writer.writerow(["doc1", "train", STORY, STORY.lower()])
        writer.writerow(["doc2", "valid", "A bean, grown.", "a bean , grown ."])
        writer.writerow(["doc2", "test", "A bean, grown.", "a bean , grown ."])


def boolq(d):
    """``train.jsonl``, ``dev.jsonl`` (downloaded one by one): ``answer`` is a JSON bool."""
    for split in ("train", "dev"):
        _jsonl(d / f"{split}.jsonl", [
            {"question": "did the bean grow", "title": "Bean", "answer": True, "passage": STORY},
            {"question": "is the bean a rose", "title": "Bean", "answer": False, "passage": STORY}])


def boolq_cs(d):
    """allenai/contrast-sets ``BoolQ/boolq_perturbed.json``: one line; a template entry
    first; a blank perturbation left by an annotator."""
    _json(d / "BoolQ" / "boolq_perturbed.json", {"data": [
        {"title": "Title", "paragraph": "Paragraph", "question": "Question", "answer": "Gold Answer",
         "perturbed_questions": [{"perturbed_q": "Perturbed Q", "answer": "New Answer"}]},
        {"title": "Bean", "paragraph": STORY, "question": "did the bean grow", "answer": "TRUE",
         "perturbed_questions": [{"perturbed_q": "did the bean shrink", "answer": "FALSE"},
                                 {"perturbed_q": "", "answer": ""}]}]})


def _ai2(qid, labels, key):
    return {"id": qid, "question": {"stem": "What do plants need?", "choices": [
        {"text": txt, "label": lab} for lab, txt in zip(labels, ["sand", "light", "salt", "ice"])]},
        "answerKey": key}


def arc(d):
    """``ARC-V1-Feb2018.zip`` -> ``ARC-V1-Feb2018-2/ARC-{Easy,Challenge}/ARC-*-{Train,Dev,Test}.jsonl``
    (some questions label their options 1-4)."""
    for part in ("Easy", "Challenge"):
        for split in ("Train", "Dev", "Test"):
            _jsonl(d / "ARC-V1-Feb2018-2" / f"ARC-{part}" / f"ARC-{part}-{split}.jsonl",
                   [_ai2(f"{part}-{split}-1", "ABCD", "B"), _ai2(f"{part}-{split}-2", "1234", "3")])


def obqa(d):
    """``OpenBookQA-V1-Sep2018.zip`` -> ``OpenBookQA-V1-Sep2018/Data/Main/{train,dev,test}.jsonl``."""
    for split in ("train", "dev", "test"):
        _jsonl(d / "OpenBookQA-V1-Sep2018" / "Data/Main" / f"{split}.jsonl",
               [_ai2(f"o-{split}", "ABCD", "B")])


def _csqa(qid, key=None):
    record = {"answerKey": key, "id": qid, "question": {"question_concept": "bean", "choices": [
        {"label": lab, "text": txt} for lab, txt in zip("ABCDE", ["jar", "sky", "sea", "sun", "moon"])],
        "stem": "Where is a bean kept?"}}
    if key is None:
        del record["answerKey"]
    return record


def commonsenseqa(d):
    """``{train,dev}_rand_split.jsonl``, ``test_rand_split_no_answers.jsonl``: the official
    files nest ``question.stem`` and ``question.choices`` (the hub export is flat)."""
    _jsonl(d / "train_rand_split.jsonl", [_csqa("c1", "A")])
    _jsonl(d / "dev_rand_split.jsonl", [_csqa("c2", "A")])
    _jsonl(d / "test_rand_split_no_answers.jsonl", [_csqa("c3")])


def mctest(d):
    """``MCTest.zip`` -> ``MCTest/mc{160,500}.{train,dev,test}.tsv`` and the train/dev
    ``.ans``; the test answers come in ``MCTestAnswers.zip`` -> ``MCTestAnswers/*.test.ans``.
    TSV: id, properties, story (``\\newline``/``\\tab`` escapes), then 4 x (question, A-D)."""
    questions = []
    for i in range(4):
        prefix = "one" if i % 2 == 0 else "multiple"
        questions += [f"{prefix}: Question {i + 1}?", "red", "blue", "green", "gold"]
    for subset in ("mc160", "mc500"):
        for split in ("train", "dev", "test"):
            row = [f"{subset}.{split}.0", "Author: A1;Work Time(s): 100;Qual. score: 4",
                   "Mia had a bean.\\newlineIt\\tabgrew."]
            _text(d / "MCTest" / f"{subset}.{split}.tsv", "\t".join(row + questions) + "\n")
            answers_dir = d / ("MCTestAnswers" if split == "test" else "MCTest")
            _text(answers_dir / f"{subset}.{split}.ans", "A\tC\tD\tB\n")


_PIQA = [{"goal": "Plant a bean.", "sol1": "Put it in soil.", "sol2": "Put it in ice."},
         {"goal": "Water a bean.", "sol1": "Use sand.", "sol2": "Use a can."}]


def piqa(d):
    """The authors' repository: ``train.jsonl``, ``valid.jsonl`` + ``{split}-labels.lst``
    (0/1), ``tests.jsonl`` unlabelled. (AI2's layout: :func:`piqa_ai2`.)"""
    records = [dict(r, id=f"p{i}") for i, r in enumerate(_PIQA, 1)]
    for split in ("train", "valid"):
        _jsonl(d / f"{split}.jsonl", records)
        _text(d / f"{split}-labels.lst", "0\n1\n")
    _jsonl(d / "tests.jsonl", records)


def piqa_ai2(d):
    """AI2's ``physicaliqa-train-dev.zip`` -> ``physicaliqa-train-dev/{train,dev}.jsonl`` +
    ``{train,dev}-labels.lst``."""
    for split in ("train", "dev"):
        _jsonl(d / "physicaliqa-train-dev" / f"{split}.jsonl", _PIQA)
        _text(d / "physicaliqa-train-dev" / f"{split}-labels.lst", "0\n1\n")


def siqa(d):
    """``socialiqa-train-dev.zip`` -> ``socialiqa-train-dev/{train,dev}.jsonl`` + labels 1-3."""
    record = {"context": "Mia watered the bean.", "question": "Why did Mia do this?",
              "answerA": "to help it grow", "answerB": "to sleep", "answerC": "to swim"}
    for split in ("train", "dev"):
        _jsonl(d / "socialiqa-train-dev" / f"{split}.jsonl", [record])
        _text(d / "socialiqa-train-dev" / f"{split}-labels.lst", "1\n")


WINOGRANDE_TRAIN_SIZES = {"xs": 1, "s": 2, "m": 3, "l": 4, "xl": 5}


def winogrande(d):
    """``winogrande_1.1.zip`` -> ``winogrande_1.1/train_{xs,s,m,l,xl}.jsonl``, ``dev.jsonl``,
    ``test.jsonl`` (no ``answer``), with ``*-labels.lst`` beside them."""
    top = d / "winogrande_1.1"
    record = {"qID": "w1", "sentence": "The bean beat the rose because _ grew faster.",
              "option1": "the bean", "option2": "the rose", "answer": "1"}
    for size, count in WINOGRANDE_TRAIN_SIZES.items():
        _jsonl(top / f"train_{size}.jsonl", [dict(record, qID=f"{size}{i}") for i in range(count)])
        _text(top / f"train_{size}-labels.lst", "1\n" * count)
    _jsonl(top / "dev.jsonl", [dict(record, qID="w2", answer="2")])
    _text(top / "dev-labels.lst", "2\n")
    test = dict(record, qID="w3")
    del test["answer"]
    _jsonl(top / "test.jsonl", [test])


def _drop_doc(validated=True):
    # A number (with a validated span), a date "June 2020", a year-only date, a two-span answer.
    pairs = [
        {"question": "How many beans?",
         "answer": {"number": "1", "date": dict(_DATE), "spans": []}, "query_id": "d1",
         "validated_answers": [{"number": "", "date": dict(_DATE), "spans": ["one"]}]},
        {"question": "When was it tall?",
         "answer": {"number": "", "date": {"day": "", "month": "June", "year": "2020"}, "spans": []},
         "query_id": "d2", "validated_answers": []},
        {"question": "When was the bean first planted?",
         "answer": {"number": "", "date": {"day": "", "month": "", "year": "1615"}, "spans": []},
         "query_id": "d3", "validated_answers": []},
        {"question": "Which plants did Mia grow?",
         "answer": {"number": "", "date": dict(_DATE), "spans": ["bean", "rose"]}, "query_id": "d4",
         "validated_answers": [{"number": "", "date": dict(_DATE), "spans": ["bean", "rose"]},
                               {"number": "", "date": dict(_DATE), "spans": ["the bean"]}]}]
    if not validated:
        for qa in pairs:
            del qa["validated_answers"]
    return {"nfl_1": {"passage": STORY, "qa_pairs": pairs,
                      "wiki_url": "https://en.wikipedia.org/wiki/Bean"}}


def drop(d):
    """``drop_dataset.zip`` -> ``drop_dataset/drop_dataset_{train,dev}.json``."""
    for name in ("drop_dataset_train.json", "drop_dataset_dev.json"):
        _json(d / "drop_dataset" / name, _drop_doc())


def drop_contrast(d):
    """allenai/contrast-sets ``DROP/drop_contrast_sets_test.json`` (no validated answers)."""
    _json(d / "DROP" / "drop_contrast_sets_test.json", _drop_doc(validated=False))


def _wiki_article(title, paragraphs):
    """WikiText-tokens layout: `` = Title = `` between blank lines, one paragraph a line,
    every line `` ... \\n`` with a space at each end, blank lines `` \\n``."""
    lines = [" ", f" = {title} = ", " "]
    for paragraph in paragraphs:
        lines += [f" {paragraph} ", " "]
    return "\n".join(lines) + "\n"


# Three articles in the layout of wiki.test.tokens. "Constant k filter" has a sub-heading and,
# as in the real file, equation residues ` = 1 <unk> / s and a nominal <unk> k = ` and
# ` = 1 <unk> and <unk> C = ` on lines of their own right after a text line: they look
# like top-level headings but are text.
WIKITEXT_ARTICLES = 3
WIKITEXT = (
    _wiki_article("Bean", ["The bean is a <unk> seed .", "= = Growth = =", "It grows in sun ."])
    + _wiki_article("Constant k filter", [
        "Constant k filters are a type of electronic filter .",
        "= = Terminology = =",
        "The image impedance is given by\n = 1 <unk> / s and a nominal <unk> k = \n"
        " The cut @-@ off frequency is given by\n = 1 <unk> and <unk> C = \n where L is the "
        "inductance ."])
    + _wiki_article("Rose", ["A rose is red ."]))


def wikitext(d):
    """``wikitext-2-v1.zip`` -> ``wikitext-2/wiki.{train,valid,test}.tokens``."""
    for split in ("train", "valid", "test"):
        _text(d / "wikitext-2" / f"wiki.{split}.tokens", WIKITEXT)


def ptb(d):
    """``simple-examples.tgz`` -> ``simple-examples/data/ptb.{train,valid,test}.txt``:
    one sentence a line, `` ... \\n`` with a space at each end."""
    for split in ("train", "valid", "test"):
        _text(d / "simple-examples" / "data" / f"ptb.{split}.txt",
              " the bean grew \n a rose fell \n")


def lambada(d):
    """``lambada-dataset.tar.gz`` -> ``lambada/lambada_{test,development}_plain_text.txt``:
    tokenised passages, one a line, with `` `` `` and ``''`` quotes."""
    for name in ("test", "development"):
        _text(d / "lambada" / f"lambada_{name}_plain_text.txt",
              "she said `` it isn't mine '' to him\nthe end\n")


WRITERS = {"race": race, "squad_v2": squad_v2, "narrativeqa": narrativeqa, "boolq": boolq,
           "boolq_cs": boolq_cs, "arc": arc, "arc_easy": arc, "arc_challenge": arc, "obqa": obqa,
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
