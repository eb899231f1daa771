"""The thesis numbers are stored consistently with docs/spec.md section 8 and the thesis' tables."""

from nemot.evaluation import metrics
from nemot.evaluation import thesis_numbers as tn


def test_spec_section_8_values():
    assert tn.lm_perplexity("NeMoT_200", 768) == {"lambada": 71.33, "wikitext2": 36.91, "wikitext103": 33.32, "ptb": 36.24}
    assert tn.lm_perplexity("NeMoT_200", 32)["ptb"] == 31.89
    assert tn.lm_perplexity("GPT-2 Small", 1024)["ptb"] == 65.85
    (squad,) = [r for r in tn.results_for("squad_v2", "dev", "3.4") if r.model == "NeMoT♠"]
    assert squad.scores == {"total": 0.6729} and squad.epoch == 16 and squad.metric == "f1"
    (nqa,) = [r for r in tn.results_for("narrativeqa", "test", "3.7") if r.model == "GPT-2 Medium_general"]
    assert nqa.scores["total"] == 0.2611


def test_rouge_l_rows_name_the_implementation_the_thesis_used():
    # The original code scored ROUGE-L with the `rouge` package, not rouge-score.
    assert tn.THESIS_IMPLEMENTATIONS == {"rouge_l": "rouge_l_thesis"}
    rows = tn.results_for("narrativeqa") + tn.results_for("drop") + tn.results_for("drop_contrast")
    assert {r.metric for r in rows} == {"rouge_l_thesis", "drop_f1"}
    (drop,) = [r for r in tn.results_for("drop", "dev", "3.8") if r.model == "NeMoT_general"]
    assert drop.metric == "rouge_l_thesis" and drop.scores == {"total": 0.0183}


def test_table_3_8_out_of_domain_rows():
    (wg,) = [r for r in tn.results_for("winogrande", "dev") if r.model == "NeMoT_general"]
    assert wg.scores == {"total": 36.94} and wg.table == "3.8"
    (cs,) = [r for r in tn.results_for("boolq_cs", "test") if r.model == "GPT-2 Medium_general"]
    assert cs.scores == {"total": 58.42}
    assert [r.scores["total"] for r in tn.results_for("quoref_contrast", "test")] == [0.1708, 0.1754, 0.554]


def test_every_row_is_well_formed():
    expected = {"squad_v2": "f1", "quoref": "f1", "quoref_contrast": "f1", "ropes": "f1",
                "ropes_contrast": "f1", "narrativeqa": "rouge_l_thesis",
                "drop": "rouge_l_thesis", "drop_contrast": "rouge_l_thesis"}
    for row in tn.RESULTS:
        assert row.split in ("val", "test")
        assert row.metric in metrics.METRICS, row
        if not (row.dataset == "drop" and row.model == "SOTA"):  # an F1, the thesis' * note
            assert row.metric == expected.get(row.dataset, "accuracy"), row
        assert set(row.scores) <= {"total", "middle", "high", "easy", "challenge"}, row
        # thesis subsets come as full triples (Total, M, H / Total, Hard, Easy) or none
        if {"middle", "high"} & set(row.scores) and row.model != "SOTA":
            assert set(row.scores) == {"total", "middle", "high"}, row
    for row in tn.TABLE_3_1:
        assert set(row.values) == set(tn.LM_DATASETS)
