"""Reports: predictions JSONL, metrics JSON and thesis-style markdown tables."""

import json

import pytest

from nemot.evaluation import report
from nemot.evaluation.perplexity import PerplexityResult

RACE_RECORDS = [
    {"id": "m1", "prediction": "(1)", "golds": ["(1)"], "subset": "middle"},
    {"id": "m2", "prediction": "(2)", "golds": "(2)", "subset": "middle"},
    {"id": "h1", "prediction": "(3)", "golds": ["(4)"], "subset": "high"},
    {"id": "h2", "prediction": "(1)", "golds": ["(1)"], "subset": "high"},
]


def table_rows(markdown):
    """Markdown table rows as lists of cell strings (header first, separator dropped)."""
    lines = [line for line in markdown.splitlines() if line.startswith("|") and "---" not in line]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in lines]


def test_evaluate_records_by_subset():
    result = report.evaluate_records(RACE_RECORDS, "accuracy")
    assert result["scores"] == {"total": 0.75, "middle": 1.0, "high": 0.5}
    assert result["per_question"] == [1.0, 1.0, 0.0, 1.0]
    no_subset = [{"id": "q", "prediction": "the cat", "golds": ["cat", "dog"]}]
    assert report.evaluate_records(no_subset, "f1")["scores"] == {"total": 1.0}


def test_write_report_files_and_race_table(tmp_path):
    paths = report.write_report(tmp_path, RACE_RECORDS, "accuracy", "race", "dev", epoch=3, table="3.4")
    lines = paths["predictions"].read_text().splitlines()
    assert [json.loads(line)["score"] for line in lines] == [1.0, 1.0, 0.0, 1.0]
    assert json.loads(lines[1])["golds"] == "(2)"
    summary = json.loads(paths["metrics"].read_text())
    assert summary["scores"] == {"total": 0.75, "middle": 1.0, "high": 0.5}
    assert summary["num_questions"] == 4 and summary["split"] == "dev"
    assert [row["model"] for row in summary["thesis"]] == ["GPT-2 Medium♣", "NeMoT♣", "GPT-2 Medium♠", "NeMoT♠"]

    markdown = paths["report"].read_text()
    assert markdown.startswith("### RACE-dev (Accuracy)")
    rows = table_rows(markdown)
    assert rows[0] == ["Model", "Total", "M", "H"]
    assert rows[1] == ["NeMoT (this run)", "75.00 (ep3)", "100.0", "50.00"]
    assert rows[5] == ["NeMoT♠ (thesis Table 3.4)", "60.02 (ep26)", "64.48", "58.16"]
    assert len(rows) == 1 + 1 + 4


def test_table_3_7_rows_and_na_cells():
    markdown = report.results_table("squad_v2", "val", "f1", {"total": 0.5}, table="3.7")
    rows = table_rows(markdown)
    assert rows[0] == ["Model", "Total"]
    assert rows[1] == ["NeMoT (this run)", "0.5000"]
    assert ["NeMoT_general (thesis Table 3.7)", "0.5272"] in rows
    assert ["UnifiedQA_11B (thesis Table 3.7)", "0.8980"] in rows
    # ARC-test UnifiedQA has Hard/Easy but no Total: the Total cell reads N/A
    arc = table_rows(report.results_table("arc", "test", "accuracy", {"total": 0.4, "easy": 0.5, "challenge": 0.2}))
    assert arc[0] == ["Model", "Total", "Hard", "Easy"]
    assert arc[1] == ["NeMoT (this run)", "40.00", "20.00", "50.00"]
    assert ["UnifiedQA_Base (thesis Table 3.7)", "N/A", "45.70", "58.50"] in arc


def test_thesis_rows_only_for_the_same_metric_and_arc_parts():
    rows = table_rows(report.results_table("squad_v2", "val", "exact_match", {"total": 0.25}))
    assert rows == [["Model", "Total"], ["NeMoT (this run)", "25.00"]]
    rows = table_rows(report.results_table("arc_challenge", "test", "accuracy", {"total": 0.3}))
    assert ["NeMoT_general (thesis Table 3.7)", "32.59"] in rows
    # A part scored as a dataset of its own (its records' subset is the part): one Total
    # column, the thesis' Easy column in it, not an N/A beside a repeated one.
    easy = report.results_table("arc_easy", "test", "accuracy", {"total": 0.5, "easy": 0.5})
    assert easy.startswith("### ARC-Easy-test")
    rows = table_rows(easy)
    assert rows[0] == ["Model", "Total"] and rows[1] == ["NeMoT (this run)", "50.00"]
    assert ["NeMoT_general (thesis Table 3.7)", "41.46"] in rows


def test_read_predictions_roundtrip_and_errors(tmp_path):
    paths = report.write_report(tmp_path, RACE_RECORDS, "accuracy", "race", "test")
    assert [r["id"] for r in report.read_predictions(paths["predictions"])] == ["m1", "m2", "h1", "h2"]
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "1", "prediction": "a", "golds": ["a"]}\n{"id": "2", "golds": ["b"]}\n')
    with pytest.raises(ValueError, match=r"bad.jsonl:2: .*missing field\(s\) \['prediction'\]"):
        report.read_predictions(bad)
    bad.write_text("{not json\n")
    with pytest.raises(ValueError, match="bad.jsonl:1: not valid JSON"):
        report.read_predictions(bad)


def test_lm_table_beside_table_3_1(tmp_path):
    ours = {
        ("wikitext2", 768): PerplexityResult(40.123, 1.0, 10, 2, 768, 768),
        ("wikitext2", 32): 33.0,
        ("mytext", 32): 12.5,
    }
    rows = table_rows(report.lm_table(ours))
    assert rows[0] == ["Model", "LAMBADA (PPL)", "WikiText-2 (PPL)", "WikiText-103 (PPL)", "PTB (PPL)", "mytext (PPL)"]
    assert rows[1] == ["NeMoT (this run) ♣ (w=768)", "N/A", "40.12", "N/A", "N/A", "N/A"]
    assert rows[2] == ["NeMoT (this run) ♠ (w=32)", "N/A", "33.00", "N/A", "N/A", "12.50"]
    assert ["GPT-2 Small (w=1024) (thesis Table 3.1)", "35.13", "29.41", "37.50", "65.85", "N/A"] in rows
    assert ["NeMoT_200 ♠ (w=32) (thesis Table 3.1)", "71.33", "30.81", "27.77", "31.89", "N/A"] in rows
    paths = report.write_lm_report(tmp_path, ours)
    saved = json.loads(paths["metrics"].read_text())
    assert {(e["dataset"], e["window"], e["perplexity"]) for e in saved["results"]} == {
        ("wikitext2", 768, 40.123), ("wikitext2", 32, 33.0), ("mytext", 32, 12.5),
    }
    assert paths["report"].read_text() == report.lm_table(ours)


def test_bad_records_name_the_record():
    with pytest.raises(ValueError, match=r"records\[1\] \(id 'b'\): missing field\(s\) \['golds'\]"):
        report.evaluate_records([{"id": "a", "prediction": "", "golds": ""}, {"id": "b", "prediction": ""}], "f1")
    with pytest.raises(ValueError, match=r"records\[0\] \(id 'a'\): golds is an empty list"):
        report.evaluate_records([{"id": "a", "prediction": "x", "golds": []}], "f1")


def test_write_report_with_training_log_draws_curves(tmp_path):
    log = tmp_path / "results.csv"
    log.write_text("epoch,loss,val_loss,val_metric\n1,2.0,1.5,0.3\n2,1.5,1.2,0.4\n3,1.0,1.4,0.5\n")
    paths = report.write_report(tmp_path / "out", RACE_RECORDS, "accuracy", "race", "dev", training_log=log)
    assert paths["curves"] == tmp_path / "out" / "race_dev_curves.png"
    assert paths["curves"].read_bytes()[:4] == b"\x89PNG"
    summary = json.loads(paths["metrics"].read_text())
    assert (summary["club_epoch"], summary["spade_epoch"]) == (2, 3)
    assert "![training curves](race_dev_curves.png)" in paths["report"].read_text()


def test_rouge_l_reports_both_implementations_with_the_thesis_rows_in_its_own(tmp_path):
    records = [
        {"id": "a", "prediction": "The cat sat", "golds": ["the cat sat", "a dog"]},
        {"id": "b", "prediction": "Mary's mother", "golds": ["Mary 's mother"]},
    ]
    paths = report.write_report(tmp_path, records, "rouge_l", "narrativeqa", "test", table="3.4")
    summary = json.loads(paths["metrics"].read_text())
    # rouge-score: both 1.0. The thesis' `rouge` package: case-sensitive (2/3), whitespace
    # tokens (P = 1/2, R = 1/3: 0.4).
    assert summary["metric"] == "rouge_l" and summary["scores"] == {"total": 1.0}
    assert summary["metrics"] == ["rouge_l", "rouge_l_thesis"]
    assert summary["scores_by_metric"]["rouge_l_thesis"]["total"] == pytest.approx((2 / 3 + 0.4) / 2, abs=1e-7)
    assert {row["metric"] for row in summary["thesis"]} == {"rouge_l_thesis"}
    lines = [json.loads(line) for line in paths["predictions"].read_text().splitlines()]
    assert lines[1]["score"] == 1.0 and lines[1]["scores"]["rouge_l_thesis"] == pytest.approx(0.4, abs=1e-7)

    markdown = paths["report"].read_text()
    rows = table_rows(markdown)
    assert rows[0] == ["Model", "ROUGE-L", "ROUGE-L (thesis)"]
    assert rows[1] == ["NeMoT (this run)", "1.000", "0.5333"]
    # The thesis' numbers sit under the implementation that computed them.
    assert ["NeMoT♠ (thesis Table 3.4)", "N/A", "0.4119 (ep1)"] in rows
    assert "ROUGE-L (thesis): as the thesis computed it, the `rouge` package 1.0.1" in markdown
    assert "ROUGE-L: nemot's default, the `rouge-score` package" in markdown


def test_table_3_8_rows_beside_drop():
    rows = table_rows(report.results_table("drop", "dev", ["rouge_l", "rouge_l_thesis"],
                                           {"rouge_l": {"total": 0.1}, "rouge_l_thesis": {"total": 0.05}}))
    assert rows[1] == ["NeMoT (this run)", "0.1000", "0.05000"]
    assert ["NeMoT_general (thesis Table 3.8)", "N/A", "0.01830"] in rows


def test_a_report_adds_the_metric_of_the_thesis_rows(tmp_path):
    # Quoref scored with DROP's F1: the thesis' Table 3.8 row is a SQuAD F1, so that
    # column is added and the row sits in it.
    records = [{"id": "q", "prediction": "Tom Jones", "golds": ["Tom"]}]
    paths = report.write_report(tmp_path, records, "drop_f1", "quoref", "dev")
    summary = json.loads(paths["metrics"].read_text())
    assert summary["metrics"] == ["drop_f1", "f1"] and summary["metric"] == "drop_f1"
    assert summary["scores_by_metric"]["f1"] == {"total": pytest.approx(2 / 3)}
    rows = table_rows(paths["report"].read_text())
    assert rows[0] == ["Model", "DROP F1", "F1-score"]
    assert ["NeMoT_general (thesis Table 3.8)", "N/A", "0.1223"] in rows


def test_scores_read_as_the_thesis_prints_them():
    assert [report.format_value(v) for v in (53.9, 5.25, 100.0, 0, 0.0, None)] == \
        ["53.90", "5.250", "100.0", "0.00", "0.00", "N/A"]
