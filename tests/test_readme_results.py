"""The README's figures are the committed results': the comparison's score table and its
tests against the plain backbone are ``results/compare/minbert/report.md``'s, the status table's NAMES numbers are
``results/modact/names_lstm/report.json``'s, its SST-2 numbers (and docs/modact.md's)
``results/modact/sst2_lstm/report.json``'s, and the GPU sentence is
``bench/results/gpu_nvidia_h200_jax.json``'s, the reliability figures ``fuzz.json``'s and
``faults.json``'s, docs/performance.md's compile table ``compile_cpu_jax.json``'s, the demo's
``results/demo/``'s, the suite's time docs/performance.md's table of measured runs. (The
NAMES table itself: tests/modact/test_names_results.py.)"""

import json
import re
from pathlib import Path

from nemot import demo

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def tables(section):
    """The markdown tables of a report section, each a list of lines."""
    found, current = [], []
    for line in section.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            found, current = [*found, current], []
    return found + ([current] if current else [])


def test_the_comparison_table_is_the_committed_report():
    report = (ROOT / "results" / "compare" / "minbert" / "report.md").read_text(encoding="utf-8")
    section = report.split("## score\n", 1)[1].split("\n## ", 1)[0]
    scores, pairs = tables(section)
    # The README keeps the scores and each mechanism against the plain backbone.
    expected = scores + pairs[:2] + [line for line in pairs if " vs none |" in line]
    assert any(line.startswith("| nemot_gate vs none |") for line in expected)
    missing = [line for line in expected if line not in README.splitlines()]
    assert not missing, "README's comparison table is stale; paste:\n" + "\n".join(expected)


def test_the_status_table_quotes_the_names_report():
    summary = json.loads((ROOT / "results" / "modact" / "names_lstm" / "report.json")
                         .read_text())["summary"]
    row = next(line for line in README.splitlines() if line.startswith("| *Context Dependent"))
    accuracy = summary["modulated"]["test_accuracy"]
    assert f"modulated {accuracy['mean']:.4f}" in row
    assert f"{accuracy['paper']:.4f} for the modulated cell" in row


def test_the_sst2_lines_quote_the_sst2_report():
    """README's status row and docs/modact.md's table: every finished SST-2 variant's
    numbers as results/modact/sst2_lstm/report.json has them, and its count of runs."""
    summary = json.loads((ROOT / "results" / "modact" / "sst2_lstm" / "report.json")
                         .read_text())["summary"]
    row = next(line for line in README.splitlines() if "Table 4 SST-2" in line)
    runs = sum(variant["test_accuracy"]["n"] for variant in summary.values())
    assert f"{runs} of 40 runs finished" in row
    docs = (ROOT / "docs" / "modact.md").read_text(encoding="utf-8")
    for name, variant in summary.items():
        accuracy = variant["test_accuracy"]
        assert f"{accuracy['mean']:.4f} (paper {accuracy['paper']:.4f})" in row, name
        line = next(line for line in docs.splitlines() if line.startswith(f"| {name} | ."))
        short = "{:.4f}".format  # the docs table's numbers without their leading zero
        assert (f"| {short(accuracy['mean'])[1:]} ({accuracy['n']}); mean over epochs "
                f"{short(variant['test_accuracy_epoch_mean']['mean'])[1:]}, best "
                f"{short(variant['test_accuracy_epoch_best']['mean'])[1:]} |") in line, name


def test_the_gpu_sentence_quotes_the_benchmark():
    result = json.loads((ROOT / "bench" / "results" / "gpu_nvidia_h200_jax.json")
                        .read_text())["result"]
    nemot = result["train"]["nemot"]["16"]
    quoted = (f"{nemot['step_seconds'] * 1000:.0f} ms a step ({nemot['mfu'] * 100:.1f}% MFU), "
              f"{result['step_ratio']['nemot_vs_keras_hub_gpt2@16']:.2f}× the step of")
    assert quoted in " ".join(README.split())
    again = result["remeasured_2026_11_30"]
    assert (f"took {again['call_nemot']['train']['16']['step_seconds'] * 1000:.0f} ms a step "
            f"there** (2026-11-30; `GPT2Backbone` "
            f"{again['call_keras_hub_gpt2']['train']['16']['step_seconds'] * 1000:.0f} ms)"
            in " ".join(README.split()))


def test_the_reliability_figures_quote_the_benchmarks():
    fuzz = json.loads((ROOT / "bench" / "results" / "fuzz.json").read_text())["result"]
    faults = json.loads((ROOT / "bench" / "results" / "faults.json").read_text())["result"]
    text = " ".join(README.split())
    total, training = fuzz["total"], faults["training"]
    assert (f"read 10,000 mutations" in text and fuzz["examples_per_reader"] == 10000
            and len(fuzz["readers"]) * 10000 == total["inputs"])
    assert (f"{total['inputs']:,} inputs, {total['unexpected'] + total['unnamed_error']} other "
            f"exceptions, {total['hang']} hangs") in text
    cut_and_resumed = sum(p["outcome"] == "resumed" and bool(p["corrupt"])
                          for p in training["points"])
    assert (f"of {training['kill_points']} training kill points, "
            f"{training['resumed_identically']} resumed to the uninterrupted run's weights "
            f"({cut_and_resumed} of them past") in text
    assert f"and {training['named_errors']}, whose only checkpoint was cut" in text
    assert training["corrupt_files"] == 0 and training["crashes"] == 0
    assert (f"all {faults['data_prep']['finished_identically']} `data_prep` kill points"
            in text and faults["data_prep"]["kill_points"]
            == faults["data_prep"]["finished_identically"])
    workers = faults["multi_worker"]
    assert (f"of {workers['kill_points']} points, {workers['hangs']} hangs, "
            f"{workers['corrupt_files']} unreadable checkpoints, "
            f"{workers['named_stops']} of {workers['survivors']} surviving workers stopped with "
            f"their one line and {workers['resumed_identically']} resumed") in text


def test_the_compile_table_quotes_the_benchmark():
    """docs/performance.md's compile-time table row by row from ``compile_cpu_jax.json``."""
    result = json.loads((ROOT / "bench" / "results" / "compile_cpu_jax.json")
                        .read_text())["result"]
    docs = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    section = docs.split("### Compile time (`python -m bench compile`)", 1)[1].split("\n#", 1)[0]
    rows = tables(section)[0][2:]
    names = ("keras_hub_gpt2", "gpt2_baseline", "nemot", "nemot_scan", "nemot_one_block",
             "nemot_main_head", "nemot_no_dropout", "keras_hub_gpt2_no_dropout")
    assert len(rows) == len(names)
    for line, name in zip(rows, names):
        m = result["models"][name]
        ratio = result["compile_ratio"].get(f"{name}_vs_keras_hub_gpt2", 1)
        cells = [c.strip() for c in line.strip("|").split("|")[1:]]
        assert cells == [f"{m['parameters'] / 1e6:.0f}M", f"{m['xla_compile_seconds']:.1f}",
                         f"{m['jax_trace_seconds']:.1f}", f"{m['compile_seconds']:.1f}",
                         f"{ratio:.2f}" if name != "keras_hub_gpt2" else "1"], (name, cells)


def test_the_fast_demo_learned_on_jax_as_the_readme_says():
    """results/demo/summary_jax_fast.json is the fast mode of this demo (its steps) run on
    JAX, and learned: the README quotes its test accuracy."""
    summary = json.loads((ROOT / "results" / "demo" / "summary_jax_fast.json").read_text())
    assert summary["fast"] is True and summary["backend"] == "jax"
    assert summary["pretrain_steps"] == demo.FAST["pretrain_epochs"] * demo.FAST["pretrain_steps"]
    assert summary["finetune_steps"] == demo.FAST["finetune_epochs"] * demo.FAST["finetune_steps"]
    assert summary["final_perplexity"] < summary["initial_perplexity"] / 5
    assert summary["test_accuracy"] >= 0.8
    text = " ".join(README.split())
    assert (f"`KERAS_BACKEND=jax python -m nemot.demo --fast` scored "
            f"{summary['test_accuracy']:.0%} test accuracy") in text


def test_the_demo_sentence_quotes_the_committed_demo_run():
    """The README's ``make demo`` figures are those of results/demo/summary.json, the
    summary a full ``make demo`` wrote."""
    summary = json.loads((ROOT / "results" / "demo" / "summary.json").read_text())
    assert summary["fast"] is False
    quoted = (f"validation perplexity {summary['initial_perplexity']:,.0f} untrained and "
              f"{summary['final_perplexity']:,.1f} pre-trained")
    text = " ".join(README.split())
    assert quoted in text
    assert f"{summary['test_accuracy']:.0%} test accuracy (chance 50%)" in text
    assert (f"({summary['pretrain_steps']} steps)" in text
            and f"{summary['finetune_steps']} steps)" in text)


def _seconds(cell):
    """``"12 min 5 s"`` as 725; ``None`` for an empty cell."""
    match = re.fullmatch(r"(\d+) min (\d+) s", cell)
    return int(match[1]) * 60 + int(match[2]) if match else None


def test_the_suite_time_sentence_is_the_measured_range():
    """README's minutes and seconds of ``make test`` are the extremes of docs/performance.md's
    table of measured runs: the tests' wall times, rounded to the minute, and the
    installing (a fresh clone's time with installing less its tests' time)."""
    docs = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    section = docs.split("## The test suite's time\n", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")]
            for line in tables(section)[0][2:]]
    assert all(len(row) == 5 for row in rows), rows
    tests = [_seconds(row[3]) for row in rows if _seconds(row[3])]
    installing = [_seconds(row[4]) - _seconds(row[3]) for row in rows
                  if _seconds(row[3]) and _seconds(row[4])]
    assert len(tests) >= 10 and len(installing) >= 10
    text = " ".join(README.split())
    assert (f"`make test`'s tests take {round(min(tests) / 60)} to {round(max(tests) / 60)} "
            f"minutes on two CPU cores") in text
    assert f"after {min(installing)} to {max(installing)} seconds of installing" in text
