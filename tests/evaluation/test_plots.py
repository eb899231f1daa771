"""Training curves and gate maps: the numbers behind the pictures, and valid PNG files."""

import math

import numpy as np
import pytest

from nemot.evaluation import plots

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def assert_png(path):
    data = path.read_bytes()
    assert data[:8] == PNG_SIGNATURE
    assert len(data) > 10_000  # axes, curves and labels, not an empty canvas


def write_log(path, rows, header="epoch,loss,val_loss,val_metric"):
    path.write_text(header + "\n" + "\n".join(rows) + "\n")
    return path


def test_best_epochs_club_and_spade():
    epochs = [1, 2, 3, 4, 5]
    val_loss = [2.0, 1.2, 1.2, 1.5, 1.9]
    val_metric = [0.30, 0.35, 0.50, 0.62, 0.62]
    # ties go to the earliest epoch
    assert plots.best_epochs(epochs, val_loss, val_metric) == (2, 4)
    assert plots.best_epochs(epochs, val_loss, val_metric, higher_is_better=False) == (2, 1)
    # epochs without validation (NaN) are skipped
    assert plots.best_epochs([1, 2, 3], [math.nan, 3.0, 2.0], [math.nan, 0.9, 0.1]) == (3, 2)
    with pytest.raises(ValueError, match="'val_metric' has no value"):
        plots.best_epochs([1, 2], [1.0, 2.0], [math.nan, math.nan])


def test_read_training_log_and_errors(tmp_path):
    log = plots.read_training_log(write_log(tmp_path / "ok.csv", ["1,3.0,,", "2,2.0,1.5,0.4"], "epoch,loss,val_loss,val_metric,lr"))
    assert log["epoch"] == [1, 2] and log["loss"] == [3.0, 2.0]
    assert math.isnan(log["val_loss"][0]) and log["val_metric"][1] == 0.4
    with pytest.raises(ValueError, match=r"missing.csv:1: header lacks column\(s\) \['val_metric'\]"):
        plots.read_training_log(write_log(tmp_path / "missing.csv", ["1,2,3"], "epoch,loss,val_loss"))
    with pytest.raises(ValueError, match="bad.csv:3: column 'loss' is 'x1'"):
        plots.read_training_log(write_log(tmp_path / "bad.csv", ["1,2,1,0.1", "2,x1,1,0.2"]))


def test_plot_training_curves_writes_png_and_returns_epochs(tmp_path):
    rows = [f"{e},{3 / e:.3f},{1 + 0.05 * (e - 3) ** 2:.3f},{0.4 + 0.02 * e - 0.001 * max(0, e - 8) ** 2:.4f}"
            for e in range(1, 13)]
    csv_path = write_log(tmp_path / "results.csv", rows)
    out = tmp_path / "curves.png"
    assert plots.plot_training_curves(csv_path, out, title="RACE", metric_name="accuracy") == (3, 12)
    assert_png(out)


def test_gate_map_means_per_position_and_group():
    # batch 2, positions 3, d_model 4 split into 2 groups of 2 features
    gates = np.array([
        [[0.1, 0.3, 0.5, 0.7], [0.2, 0.2, 0.4, 0.4], [0.9, 0.9, 0.9, 0.9]],
        [[0.3, 0.5, 0.7, 0.9], [0.0, 0.4, 0.0, 0.8], [0.1, 0.1, 0.1, 0.1]],
    ])
    np.testing.assert_allclose(plots.gate_map(gates, 2), [[0.3, 0.7], [0.2, 0.4], [0.5, 0.5]])
    np.testing.assert_allclose(plots.gate_map(gates, 1), [[0.5], [0.3], [0.5]])
    # with a mask the second example has only position 0: positions 1-2 use example 0 alone
    mask = np.array([[True, True, True], [True, False, False]])
    np.testing.assert_allclose(plots.gate_map(gates, 2, mask), [[0.3, 0.7], [0.2, 0.4], [0.9, 0.9]])
    nobody = np.array([[True, False, True], [True, False, False]])
    assert np.isnan(plots.gate_map(gates, 2, nobody)[1]).all()
    with pytest.raises(ValueError, match="dividing d_model=4"):
        plots.gate_map(gates, 3)


def test_gate_maps_by_task_and_png(tmp_path):
    rng = np.random.default_rng(0)
    gates = {"<mqa>": rng.uniform(0.2, 0.4, (3, 12, 16)), "<gqa>": rng.uniform(0.6, 0.8, (2, 12, 16))}
    masks = {"<mqa>": np.arange(12)[None, :] < np.array([[12], [8], [5]])}
    out = tmp_path / "gates.png"
    maps = plots.plot_gate_maps(gates, out, num_groups=4, masks=masks)
    assert set(maps) == {"<mqa>", "<gqa>"} and maps["<gqa>"].shape == (12, 4)
    expected = gates["<gqa>"].reshape(2, 12, 4, 4).mean(axis=(0, 3))
    np.testing.assert_allclose(maps["<gqa>"], expected)
    np.testing.assert_allclose(maps["<mqa>"][10], gates["<mqa>"][0, 10].reshape(4, 4).mean(-1))
    assert_png(out)
    with pytest.raises(ValueError, match=r"task\(s\) \['<lm>'\]"):
        plots.gate_maps(gates, 4, masks={"<lm>": masks["<mqa>"]})


def test_distributions_share_their_bins_and_count_every_run(tmp_path):
    values = {"modulated": [0.80, 0.81, 0.81, 0.83], "C2": [0.70, 0.80], "C3": []}
    out = tmp_path / "distributions.png"
    edges, counts = plots.plot_distributions(values, out, "test_accuracy", bins=4)
    np.testing.assert_allclose(edges, [0.70, 0.7325, 0.765, 0.7975, 0.83])
    assert list(counts) == ["modulated", "C2"]  # no values, no panel
    assert list(counts["modulated"]) == [0, 0, 0, 4] and list(counts["C2"]) == [1, 0, 0, 1]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(ValueError, match="no values"):
        plots.histograms({"C3": []})


def test_distributions_draw_the_papers_mean_where_given(tmp_path, monkeypatch):
    from matplotlib.axes import Axes

    lines = []
    axvline = Axes.axvline

    def recorded(ax, x, **kwargs):
        lines.append((kwargs.get("label"), round(float(x), 4), ax))
        return axvline(ax, x, **kwargs)

    monkeypatch.setattr(Axes, "axvline", recorded)
    values = {"modulated": [0.83, 0.84], "C1": [0.82, 0.83]}
    plots.plot_distributions(values, tmp_path / "d.png", "test_accuracy",
                             reference={"modulated": 0.779, "C1": None})
    assert [(label, x) for label, x, _ in lines] == [
        ("mean", 0.835), ("paper", 0.779), ("mean", 0.825)]
    paper_axes = lines[1][2]
    assert paper_axes.get_xlim()[0] < 0.779  # the axis widened to show it


def test_gate_differences_subtract_the_reference_map(tmp_path):
    rng = np.random.default_rng(1)
    gates = {"<lm>": rng.uniform(0.2, 0.4, (2, 6, 8)), "<mqa>": rng.uniform(0.5, 0.9, (2, 6, 8))}
    out = tmp_path / "differences.png"
    differences = plots.plot_gate_differences(gates, out, reference="<lm>", num_groups=2,
                                              token_labels=list("abcdef"))
    maps = plots.gate_maps(gates, 2)
    assert list(differences) == ["<mqa>"]
    np.testing.assert_allclose(differences["<mqa>"], maps["<mqa>"] - maps["<lm>"])
    assert_png(out)
    with pytest.raises(ValueError, match="reference '<gqa>'"):
        plots.plot_gate_differences(gates, out, reference="<gqa>", num_groups=2)
    with pytest.raises(ValueError, match="besides the reference"):
        plots.plot_gate_differences({"<lm>": gates["<lm>"]}, out, reference="<lm>", num_groups=2)


def test_loss_terms_read_from_the_results_csv(tmp_path):
    log = write_log(tmp_path / "results.csv", ["1,5.0,4.0,,3.0,6.0,2.0,2.5", "2,3.0,2.0,,1.5,5.0,1.0,"],
                    header="epoch,loss,val_loss,val_metric,task_loss,lm_loss,vanilla_loss,val_task_loss")
    out = tmp_path / "terms.png"
    terms = plots.plot_loss_terms(log, out, steps_per_epoch=10)
    assert list(terms) == ["epoch", "task_loss", "val_task_loss", "lm_loss", "vanilla_loss"]
    assert terms["lm_loss"] == [6.0, 5.0] and math.isnan(terms["val_task_loss"][1])
    assert_png(out)
    bare = write_log(tmp_path / "bare.csv", ["1,5.0,4.0,"])
    with pytest.raises(ValueError, match="bare.csv:1: header has none of the loss-term columns"):
        plots.read_loss_terms(bare)


def test_bars_and_curves_draw_what_they_are_given(tmp_path):
    series = plots.plot_bars({"arc": {"ours": 0.3, "thesis": 0.6}, "piqa": {"ours": 0.55}},
                             tmp_path / "bars.png", ylabel="accuracy",
                             reference_lines={"chance": {"arc": 0.25, "piqa": 0.5}})
    assert series == ["ours", "thesis"]
    assert_png(tmp_path / "bars.png")
    (low, high), _ = plots.plot_curves({"train": ([1, 2, 3], [3.0, math.nan, 1.0]),
                                        "val": ([3], [2.0])}, tmp_path / "curves.png",
                                       xlabel="step", ylabel="loss", markers={"val": "o"})
    assert 0.8 < low < 1 and 3 < high < 3.2      # the points' range, a little margin
    assert_png(tmp_path / "curves.png")
    with pytest.raises(ValueError, match="curve 'train' has 2 x and 1 y values"):
        plots.plot_curves({"train": ([1, 2], [1.0])}, tmp_path / "bad.png", "x", "y")


@pytest.mark.parametrize("variants", [2, 6])
def test_bar_labels_do_not_overlap_however_many_series(variants):
    """Six variants a group within a thousandth of each other (the committed comparison's
    figure): each bar's label stays apart from its neighbours' and inside the axes."""
    values = {task: {f"variant {k}": 0.714 + 0.001 * k for k in range(variants)}
              for task in ("sst", "quora", "sts", "score")}
    figure, _ = plots._bars(values, "mean", "title", None, "{:.3f}")
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    axis, = figure.axes
    boxes = [text.get_window_extent(renderer).padded(1.5) for text in axis.texts]   # px
    assert len(boxes) == 4 * variants
    assert not [(a, b) for i, a in enumerate(boxes) for b in boxes[i + 1:] if a.overlaps(b)]
    inside = axis.get_window_extent(renderer)
    assert all(box.y1 <= inside.y1 for box in boxes)
    legend = axis.get_legend().get_window_extent(renderer)
    assert legend.x0 >= inside.x1 and not any(legend.overlaps(box) for box in boxes)


@pytest.mark.parametrize("xs, integer", [([1, 2, 3, 4], True), ([0.5, 1.0, 1.5], False)])
def test_curves_over_epochs_or_steps_tick_whole_numbers(xs, integer):
    """Four epochs are ticked 1, 2, 3, 4, not 1.0, 1.5, ... 4.0; fractional x keeps
    fractional ticks."""
    figure = plots._curves({"loss": (xs, [4.0, 3.0, 2.0, 1.0][:len(xs)])}, "epoch", "loss",
                           None, False, None)
    axis, = figure.axes
    low, high = axis.get_xlim()
    ticks = [t for t in axis.get_xticks() if low <= t <= high]
    assert all(float(t).is_integer() for t in ticks) == integer, ticks
