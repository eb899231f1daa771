"""Hand-worked cases for the QA metrics (docs/spec.md section 6)."""

import pytest

from nemot.evaluation import metrics
from nemot.evaluation.metrics import _best_assignment_total


def test_normalize_answer_drops_case_punctuation_articles_and_extra_spaces():
    assert metrics.normalize_answer("  The Cat's, a  HAT!  an apple ") == "cats hat apple"
    # Articles only as whole words: "then"/"another" keep their letters.
    assert metrics.normalize_answer("then another") == "then another"


def test_f1_token_overlap():
    # prediction {cat, sat}, gold {cat, sat, down}: P = 1, R = 2/3, F1 = 0.8
    assert metrics.f1("The cat sat.", "a cat sat down") == pytest.approx(0.8)
    # repeated tokens count with multiplicity: common {x: 1, y: 1}; P = 2/3, R = 1
    assert metrics.f1("x x y", "x y") == pytest.approx(0.8)
    assert metrics.f1("dog", "cat") == 0.0


def test_f1_and_exact_match_take_the_best_gold():
    golds = ["Denver Broncos", "Broncos", "the Denver Broncos team"]
    assert metrics.exact_match("broncos!", golds) == 1.0
    assert metrics.f1("Denver", golds) == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert metrics.f1("Broncos", golds) == 1.0
    assert metrics.f1("Broncos", "Broncos") == metrics.f1("Broncos", ["Broncos"])


def test_squad_v2_no_answer_rules():
    assert metrics.f1("", "") == 1.0
    assert metrics.exact_match("", [""]) == 1.0
    assert metrics.f1("", "Paris") == 0.0
    assert metrics.f1("Paris", "") == 0.0
    assert metrics.exact_match("Paris", "") == 0.0
    # "The" normalises to nothing, so it counts as an empty answer.
    assert metrics.f1("The", "") == 1.0
    # one empty gold among others: the empty prediction matches it
    assert metrics.f1("", ["Paris", ""]) == 1.0


def test_exact_match_ignores_punctuation_and_articles_only():
    assert metrics.exact_match("The Eiffel Tower.", "eiffel tower") == 1.0
    assert metrics.exact_match("Eiffel Towers", "eiffel tower") == 0.0


def test_rouge_l_lcs_f_measure():
    # tokens pred [the cat sat on mat], gold [the cat is on the mat]; LCS = 4
    expected = 2 * (4 / 5) * (4 / 6) / (4 / 5 + 4 / 6)
    assert metrics.rouge_l("the cat sat on mat", "the cat is on the mat") == pytest.approx(expected)
    # rouge-score tokenisation: case and punctuation ignored, articles kept
    assert metrics.rouge_l("Cat-sat!", "cat sat") == pytest.approx(1.0)
    assert metrics.rouge_l("cat", ["dog", "a cat"]) == pytest.approx(2 * 1 * 0.5 / 1.5)
    assert metrics.rouge_l("", "cat") == 0.0


def test_rouge_l_thesis_is_the_rouge_package_the_original_code_used():
    # Case-sensitive: only "cat" is common; P = R = 1/2. rouge-score lower-cases.
    assert metrics.rouge_l_thesis("The cat", "the cat") == pytest.approx(0.5, abs=1e-7)
    assert metrics.rouge_l("The cat", "the cat") == 1.0
    # Whitespace tokens: "Mary's" is not "Mary" + "'s"; P = 1/2, R = 1/3, F = 0.4.
    assert metrics.rouge_l_thesis("Mary's mother", "Mary 's mother") == pytest.approx(0.4, abs=1e-7)
    assert metrics.rouge_l("Mary's mother", "Mary 's mother") == 1.0
    # Distinct words are counted: n = |{the, cat}| = 2, so a repeated word costs nothing.
    assert metrics.rouge_l_thesis("the the cat", "the cat") == pytest.approx(1.0, abs=1e-7)
    assert metrics.rouge_l("the the cat", "the cat") == pytest.approx(0.8)
    # Sentences split at ".": "3.5" is the words "3" and "5"; P = 2/3, R = 1, F = 0.8.
    assert metrics.rouge_l_thesis("3.5 apples", "3 apples") == pytest.approx(0.8, abs=1e-7)
    # Of the two LCSs of length 2 the package reconstructs "a a" (one distinct word).
    assert metrics.rouge_l_thesis("a a b", "a b a") == pytest.approx(0.5, abs=1e-7)
    # The package raises on an empty text; the original code scored it 0.
    assert metrics.rouge_l_thesis("", "cat") == 0.0 and metrics.rouge_l_thesis("...", "cat") == 0.0
    assert metrics.rouge_l_thesis("cat", ["dog", "cat"]) == pytest.approx(1.0, abs=1e-7)
    # The package's 1e-8 guard is kept: identical texts score just under 1.
    assert 1 - 1e-8 < metrics.rouge_l_thesis("cat", "cat") < 1.0


def test_accuracy_is_exact_after_stripping():
    predictions = ["(1)", " (2) ", "(3)", "Yes"]
    golds = ["(1)", "(2)", ["(1)", "(2)"], "yes"]
    assert metrics.accuracy(predictions, golds) == pytest.approx(2 / 4)


def test_drop_f1_number_normalisation_and_matching():
    assert metrics.drop_f1("5", "5.0") == 1.0
    assert metrics.drop_f1("Hi there!", "hi there") == 1.0
    # the gold's number must appear in the prediction, whatever the word overlap
    assert metrics.drop_f1("13 yards", "12 yards") == 0.0
    assert metrics.f1("13 yards", "12 yards") == pytest.approx(0.5)
    # hyphens split tokens; "the" is dropped
    assert metrics.drop_f1("state of art", "state-of-the-art") == 1.0


def test_drop_f1_bags_of_spans_and_rounding():
    # one predicted span against a two-span gold: (1 + 0) / max(2, 1)
    assert metrics.drop_f1("Jim", [("Jim", "Carl")]) == 0.5
    assert metrics.drop_f1(["Carl", "Jim"], [("Jim", "Carl")]) == 1.0
    # P = R = 2/3 -> 0.666..., rounded to 2 decimals by the official script
    assert metrics.drop_f1("x y z", "y z w") == 0.67
    # best alternative gold; blank alternatives are skipped
    assert metrics.drop_f1("Carl", ["", ("Jim",), ("Carl",)]) == 1.0
    assert metrics.drop_f1("Carl", [""]) == 0.0


def test_drop_assignment_is_optimal_not_greedy():
    # greedy row by row would take 1.0 + 0.0; the best matching is 0.9 + 0.8
    assert _best_assignment_total([[1.0, 0.9], [0.8, 0.0]]) == pytest.approx(1.7)
    assert _best_assignment_total([[0.2, 0.7, 0.1]]) == pytest.approx(0.7)
    assert _best_assignment_total([[0.2], [0.7], [0.1]]) == pytest.approx(0.7)


def test_drop_answer_strings():
    date = {"day": "", "month": "", "year": ""}
    assert metrics.drop_answer_strings({"number": "12", "date": date, "spans": []}) == ("12",)
    assert metrics.drop_answer_strings({"number": "", "date": date, "spans": ["a", "b"]}) == ("a", "b")
    assert metrics.drop_answer_strings(
        {"number": "", "date": {"day": "3", "month": "May", "year": "1990"}, "spans": []}
    ) == ("3 May 1990",)
    # A year-only date is the year, as the DROP reader reads it (not "  1615").
    assert metrics.drop_answer_strings(
        {"number": "", "date": {"day": "", "month": "", "year": "1615"}, "spans": []}) == ("1615",)
    with pytest.raises(ValueError, match="number"):
        metrics.drop_answer_strings({"answer": "x"})


def test_multi_part_golds_are_one_answer():
    # Quoref's "Traci" + "Gibson": a partial prediction is half right with the official rule.
    gold = [("Traci", "Gibson")]
    assert metrics.drop_f1("Traci", gold) == 0.5
    # A text prediction is read as the parts the target lists ("Traci, Gibson").
    assert metrics.drop_f1("Traci, Gibson", gold) == 1.0
    assert metrics.drop_f1("Gibson, Traci", [["Traci", "Gibson"]]) == 1.0
    # Against a one-part gold a comma stays inside the one span.
    assert metrics.drop_f1("Boston, Massachusetts", "Boston, Massachusetts") == 1.0
    # One country of a five-country answer: 0.2, not 1.0.
    countries = [("France", "Spain", "Italy", "Greece", "Malta")]
    assert metrics.drop_f1("Spain", countries) == 0.2
    # SQuAD F1 and ROUGE-L see a multi-part gold as its text.
    assert metrics.f1("Traci", gold) == pytest.approx(2 / 3)
    assert metrics.rouge_l("Traci Gibson", gold) == 1.0
    assert metrics.score("drop_f1", ["Traci", "Traci, Gibson"], [gold, gold]) == 0.75


def test_aggregate_by_subset_race_and_arc():
    predictions = ["(1)", "(2)", "(3)", "(4)"]
    golds = ["(1)", "(1)", "(3)", "(4)"]
    assert metrics.race_scores(predictions, golds, ["middle", "middle", "high", "high"]) == {
        "total": 0.75, "middle": 0.5, "high": 1.0,
    }
    assert metrics.arc_scores(predictions, golds, ["easy", "challenge", "challenge", "easy"]) == {
        "total": 0.75, "easy": 1.0, "challenge": 0.5,
    }
    with pytest.raises(ValueError, match="question 2: subset 'hard'"):
        metrics.arc_scores(predictions, golds, ["easy", "easy", "hard", "easy"])


def test_score_uses_the_registry_and_means_over_questions():
    assert metrics.score("f1", ["cat", "dog"], ["cat", "cat"]) == 0.5
    assert metrics.score("exact_match", ["a cat"], [["dog", "cat"]]) == 1.0
    assert set(metrics.METRICS) == {"accuracy", "f1", "exact_match", "rouge_l", "rouge_l_thesis",
                                    "drop_f1"}
    with pytest.raises(ValueError, match="unknown metric 'bleu'"):
        metrics.get_metric("bleu")


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="golds is an empty list"):
        metrics.f1("x", [])
    with pytest.raises(TypeError, match=r"golds\[1\] is int"):
        metrics.f1("x", ["x", 3])
    with pytest.raises(ValueError, match="2 predictions but 1 gold"):
        metrics.accuracy(["a", "b"], ["a"])
    with pytest.raises(ValueError, match="zero questions"):
        metrics.accuracy([], [])
