"""The thesis numbers are stored consistently with SPEC.md section 8."""

from nemot.evaluation import thesis_numbers as tn


def test_spec_section_8_values():
    assert tn.lm_perplexity("NeMoT_200", 768) == {"lambada": 71.33, "wikitext2": 36.91, "wikitext103": 33.32, "ptb": 36.24}
    assert tn.lm_perplexity("NeMoT_200", 32)["ptb"] == 31.89
    assert tn.lm_perplexity("GPT-2 Small", 1024)["ptb"] == 65.85
    (squad,) = [r for r in tn.results_for("squad_v2", "dev", "3.4") if r.model == "NeMoT♠"]
    assert squad.scores == {"total": 0.6729} and squad.epoch == 16 and squad.metric == "f1"
    (nqa,) = [r for r in tn.results_for("narrativeqa", "test", "3.7") if r.model == "GPT-2 Medium_general"]
    assert nqa.scores["total"] == 0.2611


def test_every_row_is_well_formed():
    metrics = {"squad_v2": "f1", "narrativeqa": "rouge_l"}
    for row in tn.RESULTS:
        assert row.split in ("val", "test")
        assert row.metric == metrics.get(row.dataset, "accuracy"), row
        assert set(row.scores) <= {"total", "middle", "high", "easy", "challenge"}, row
        # thesis subsets come as full triples (Total, M, H / Total, Hard, Easy) or none
        if {"middle", "high"} & set(row.scores) and row.model != "SOTA":
            assert set(row.scores) == {"total", "middle", "high"}, row
    for row in tn.TABLE_3_1:
        assert set(row.values) == set(tn.LM_DATASETS)
