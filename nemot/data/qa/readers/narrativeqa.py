"""NarrativeQA over summaries (Kočiský et al., 2018): ``qaps.csv`` (columns
``document_id, set, question, answer1, answer2``) and
``third_party/wikipedia/summaries.csv`` (``document_id, set, summary``), split by
the column ``set`` (train/valid/test).

Format ``<p1> summary <q> question <sep>`` -> ``answer1`` or ``answer2`` ``</s>``;
golds are both answers. Training takes one of the two per question and epoch, drawn
at random (seeded by seed, epoch and question), as the original code did: the
registry marks the dataset ``train_answers="one"`` and the pipelines choose.
The download is the repository's zip, ``narrativeqa-master/``.
"""

import nemot.data.raw as raw
from nemot.data.qa.readers import common
from nemot.data.raw import DataError

SPLITS = ("train", "valid", "test")
TOPS = ("narrativeqa-master", "narrativeqa")


def read(data_dir, split):
    """NarrativeQA examples of ``split`` from the raw directory (the repository root)."""
    if split not in SPLITS:
        raise ValueError(f"narrativeqa has splits {SPLITS}, got {split!r}")
    (summaries_path,) = common.find_files(data_dir, ["third_party/wikipedia/summaries.csv"],
                                          split, TOPS)
    summaries = {}
    for _, row in raw.iter_csv(summaries_path, ("document_id", "set", "summary")):
        if row["set"] == split:
            summaries[row["document_id"]] = row["summary"]
    (qaps_path,) = common.find_files(data_dir, ["qaps.csv"], split, TOPS)
    columns = ("document_id", "set", "question", "answer1", "answer2")
    for line_no, row in raw.iter_csv(qaps_path, columns):
        if row["set"] != split:
            continue
        if row["document_id"] not in summaries:
            raise DataError(qaps_path, line_no, "document_id",
                            f"a document with a summary in {summaries_path} (set {split})",
                            got=row["document_id"])
        yield common.generative("narrativeqa", f"{row['document_id']}:{line_no}", row["question"],
                                [row["answer1"], row["answer2"]],
                                passage=summaries[row["document_id"]])


def read_hub(split):
    """NarrativeQA from the Hugging Face hub (``deepmind/narrativeqa``: ``document.id``,
    ``document.summary.text``, ``question.text``, ``answers[].text``)."""
    for i, row in enumerate(raw.hub_rows("deepmind/narrativeqa", None, raw.hub_split(split))):
        yield common.generative("narrativeqa", f"{row['document']['id']}:{i}",
                                row["question"]["text"], [a["text"] for a in row["answers"]],
                                passage=row["document"]["summary"]["text"])
