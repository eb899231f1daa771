"""The README's NAMES table is the committed report's: its lines are those of
``results/modact/names_lstm/report.md`` (test accuracy: every variant, and the modulated
cell against each control). After ``nemot runs report results/modact/names_lstm``, copy
the lines this test prints when it fails."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORT = ROOT / "results" / "modact" / "names_lstm" / "report.md"


def report_lines():
    """The test-accuracy table and the modulated-vs-control rows of the report."""
    section = REPORT.read_text(encoding="utf-8").split("## test_accuracy\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    lines = [line for line in section.splitlines() if line.startswith("|")]
    # The pairs of controls stay in report.md.
    return [line for line in lines if not (line.startswith("| C") and " vs " in line)]


def test_readme_names_table_is_the_committed_report():
    readme = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    expected = report_lines()
    assert any(line.startswith("| modulated vs C1 |") for line in expected)
    missing = [line for line in expected if line not in readme]
    assert not missing, "README's NAMES table is stale; paste:\n" + "\n".join(expected)


def test_the_reports_settings_are_those_an_lstm_on_names_reads():
    """The settings table leaves out what the runs' model and data do not read (a DenseNet's
    depth, SST-2's file layout) and says so; what they do read stays."""
    from nemot.modact.experiment import unused_settings

    section = REPORT.read_text(encoding="utf-8").split("## Settings\n", 1)[1]
    shown = {line.split(" | ")[0].lstrip("| ") for line in section.splitlines()
             if line.startswith("| ") and not line.startswith("| setting")}
    assert {"model.embedding_dim", "model.dropout", "data.dataset", "train.batch_size"} <= shown
    unread = unused_settings({**{key: 0 for key in shown | {"model.depth", "data.layout"}},
                              "model.architecture": "lstm", "data.dataset": "names"})
    assert unread >= {"model.depth", "data.layout"} and not unread & shown
    assert "Left out, as these runs' model and data do not read them: " in section
    assert "`data.layout`" in section and "`model.depth`" in section
