"""Pictures of a run: training curves (thesis Figure 3.3) and gate maps.

Training log CSV (written by the trainer, one row per epoch), columns:

* ``epoch`` - int, 1-based epoch number;
* ``loss`` - mean training loss over the epoch;
* ``val_loss`` - validation loss after the epoch (blank if not evaluated);
* ``val_metric`` - validation metric after the epoch (blank if not evaluated).

Extra columns are allowed and ignored. ♣ marks the epoch of the lowest
validation loss, ♠ the epoch of the best validation metric (thesis §3.5.2).

Gate maps show where and how strongly the neuromodulatory set opens the gate:
for each task token, the mean gate value (eq. 3.12, sigmoid of the NM output)
per text position and per group of ``d_model / G`` consecutive features.

Figures are drawn on ``matplotlib.figure.Figure`` objects (Agg canvas) and
saved as PNG, without pyplot, so the global backend of a notebook is untouched.

Example:

>>> best_epochs([1, 2, 3], val_loss=[2.0, 1.5, 1.7], val_metric=[0.3, 0.4, 0.5])
(2, 3)
"""

import csv
import math

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

TRAINING_LOG_COLUMNS = ("epoch", "loss", "val_loss", "val_metric")


def _figure(size):
    figure = Figure(figsize=size, layout="constrained")
    FigureCanvasAgg(figure)
    return figure


def _parse_float(text, path, line, column, allow_blank):
    if text is None or text.strip() == "":
        if allow_blank:
            return math.nan
        raise ValueError(f"{path}:{line}: column {column!r} is empty; expected a number")
    try:
        return float(text)
    except ValueError:
        raise ValueError(f"{path}:{line}: column {column!r} is {text!r}; expected a number") from None


def read_training_log(path):
    """The training log CSV as ``{column: list}`` for :data:`TRAINING_LOG_COLUMNS`.

    ``epoch`` and ``loss`` must be numbers on every row; blank ``val_loss`` /
    ``val_metric`` cells (epochs without validation) become NaN.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        missing = [c for c in TRAINING_LOG_COLUMNS if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}:1: header lacks column(s) {missing}; expected {list(TRAINING_LOG_COLUMNS)}")
        log = {column: [] for column in TRAINING_LOG_COLUMNS}
        for line, row in enumerate(reader, start=2):
            for column in TRAINING_LOG_COLUMNS:
                value = _parse_float(row[column], path, line, column, allow_blank=column.startswith("val_"))
                if column == "epoch":
                    if value != int(value):
                        raise ValueError(f"{path}:{line}: column 'epoch' is {row[column]!r}; expected an integer")
                    value = int(value)
                log[column].append(value)
    if not log["epoch"]:
        raise ValueError(f"{path}: no epoch rows after the header")
    return log


def _best_index(values, pick):
    array = np.asarray(values, dtype=np.float64)
    if np.all(np.isnan(array)):
        return None
    # nanargmin/nanargmax return the first of equal values: ties go to the earliest epoch.
    return int(pick(array))


def best_epochs(epochs, val_loss, val_metric, higher_is_better=True):
    """The ♣ and ♠ epochs: lowest validation loss and best validation metric.

    Args:
        epochs: epoch numbers.
        val_loss, val_metric: one value per epoch; NaN where not evaluated.
        higher_is_better: False for metrics where lower is better (perplexity).

    Returns:
        ``(club_epoch, spade_epoch)``; ties go to the earliest epoch; an error
        when a column has no value at all.
    """
    epochs = list(epochs)
    if not (len(epochs) == len(val_loss) == len(val_metric)) or not epochs:
        raise ValueError(
            f"best_epochs needs equally long non-empty columns, got {len(epochs)} epochs, "
            f"{len(val_loss)} val_loss, {len(val_metric)} val_metric"
        )
    club = _best_index(val_loss, np.nanargmin)
    spade = _best_index(val_metric, np.nanargmax if higher_is_better else np.nanargmin)
    for name, index in (("val_loss", club), ("val_metric", spade)):
        if index is None:
            raise ValueError(f"best_epochs: column {name!r} has no value in any epoch")
    return epochs[club], epochs[spade]


def plot_training_curves(csv_path, out_png, title=None, metric_name="validation metric", higher_is_better=True):
    """Figure 3.3 style: (A) training loss, (B) validation loss, (C) validation metric per epoch.

    The ♣ (lowest validation loss) and ♠ (best validation metric) epochs are
    marked in every panel. Returns ``(club_epoch, spade_epoch)``.
    """
    log = read_training_log(csv_path)
    club, spade = best_epochs(log["epoch"], log["val_loss"], log["val_metric"], higher_is_better)
    panels = (
        ("(A) training loss", log["loss"], "tab:blue"),
        ("(B) validation loss", log["val_loss"], "tab:orange"),
        (f"(C) {metric_name}", log["val_metric"], "tab:green"),
    )
    figure = _figure((13, 3.8))
    axes = figure.subplots(1, 3)
    for axis, (name, values, colour) in zip(axes, panels):
        points = [(e, v) for e, v in zip(log["epoch"], values) if not math.isnan(v)]
        axis.plot([p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, color=colour)
        axis.axvline(club, color="black", linestyle="--", linewidth=1, label=f"♣ lowest val loss (ep{club})")
        axis.axvline(spade, color="tab:red", linestyle=":", linewidth=1.5, label=f"♠ best {metric_name} (ep{spade})")
        axis.set_title(name)
        axis.set_xlabel("epoch")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))
        axis.grid(alpha=0.3)
    axes[0].legend(loc="upper right", fontsize=8)
    if title:
        figure.suptitle(title)
    figure.savefig(out_png, dpi=110)
    return club, spade


def gate_map(gates, num_groups, mask=None):
    """Mean gate value per text position and feature group.

    Args:
        gates: array ``[batch, positions, d_model]`` of gate values.
        num_groups: G; ``d_model`` must divide into G equal groups of
            consecutive features.
        mask: optional bool ``[batch, positions]``, True for real (non-pad)
            text positions; means are over the examples that have the position.

    Returns:
        float array ``[positions, G]``; NaN at positions no example has.
    """
    gates = np.asarray(gates, dtype=np.float64)
    if gates.ndim != 3:
        raise ValueError(f"gates must be [batch, positions, d_model], got shape {gates.shape}")
    batch, positions, d_model = gates.shape
    if not isinstance(num_groups, int) or num_groups < 1 or d_model % num_groups:
        raise ValueError(f"num_groups must be a positive int dividing d_model={d_model}, got {num_groups!r}")
    grouped = gates.reshape(batch, positions, num_groups, d_model // num_groups).mean(axis=-1)
    if mask is None:
        return grouped.mean(axis=0)
    mask = np.asarray(mask, dtype=bool)
    if mask.shape != (batch, positions):
        raise ValueError(f"mask must be [batch, positions] = {(batch, positions)}, got shape {mask.shape}")
    counts = mask.sum(axis=0)[:, None]
    sums = (grouped * mask[..., None]).sum(axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def gate_maps(gates_by_task, num_groups, masks=None):
    """:func:`gate_map` for each task token: ``{task: [positions, G]}``."""
    if not gates_by_task:
        raise ValueError("gates_by_task is empty: give at least one task token's gate array")
    masks = masks or {}
    unknown = set(masks) - set(gates_by_task)
    if unknown:
        raise ValueError(f"masks given for task(s) {sorted(unknown)} that have no gate array")
    return {task: gate_map(gates, num_groups, masks.get(task)) for task, gates in gates_by_task.items()}


def plot_gate_maps(gates_by_task, out_png, num_groups=16, masks=None, title="Mean gate value"):
    """Heat maps (one per task token) of :func:`gate_maps`, sharing one colour scale.

    Rows are feature groups, columns text positions. Returns the maps.
    """
    maps = gate_maps(gates_by_task, num_groups, masks)
    finite = np.concatenate([m[np.isfinite(m)] for m in maps.values()])
    if finite.size == 0:
        raise ValueError("every gate position is masked out: nothing to draw")
    low, high = float(finite.min()), float(finite.max())
    figure = _figure((10, 1.2 + 2.2 * len(maps)))
    axes = figure.subplots(len(maps), 1, squeeze=False)
    for axis, (task, values) in zip(axes[:, 0], maps.items()):
        image = axis.imshow(values.T, aspect="auto", origin="lower", cmap="viridis", vmin=low, vmax=high,
                            interpolation="nearest")
        axis.set_title(f"task token {task}")
        axis.set_ylabel(f"feature group (of {num_groups})")
    axes[-1, 0].set_xlabel("text position")
    figure.colorbar(image, ax=axes[:, 0].tolist(), label="mean gate value")
    figure.suptitle(title)
    figure.savefig(out_png, dpi=110)
    return maps



def histograms(values_by_variant, bins=12):
    """``(edges, {variant: counts})``: every variant's values binned on the same ``bins``
    edges over the range of all values (a variant without values is left out)."""
    shown = {v: np.asarray(x, float) for v, x in values_by_variant.items() if len(x)}
    if not shown:
        raise ValueError("histograms: no values to bin")
    every = np.concatenate(list(shown.values()))
    low, high = every.min(), every.max()
    edges = np.linspace(low, high if high > low else low + 1e-6, bins + 1)
    return edges, {v: np.histogram(x, edges)[0] for v, x in shown.items()}


def plot_distributions(values_by_variant, out_png, metric, title=None, bins=12, colours=None,
                       reference=None):
    """One histogram per variant of a metric's values over seeds, on shared bins (the form
    of the modulated-activation paper's Table 8), each with its mean as a dashed line;
    returns the :func:`histograms` drawn.

    Args:
        values_by_variant: ``{variant: [value per run]}``.
        out_png: where the PNG goes.
        metric: the axis label.
        bins: the number of bins over the range of all values.
        colours: ``{variant: matplotlib colour}`` (default one per variant, in order), so
            that a variant keeps its colour of another figure.
        reference: ``{variant: value}`` drawn as a black dotted line (the paper's mean);
            the axis widens to show it.
    """
    edges, counts = histograms(values_by_variant, bins)
    colours = colours or {v: f"C{i % 10}" for i, v in enumerate(values_by_variant)}
    figure = _figure((5.5, 1.5 * len(counts) + 0.8))
    axes = figure.subplots(len(counts), 1, sharex=True, squeeze=False)[:, 0]
    for ax, (variant, count) in zip(axes, counts.items()):
        ax.stairs(count, edges, fill=True, color=colours[variant], alpha=0.8)
        ax.axvline(np.mean(values_by_variant[variant]), color="0.2", linestyle="--",
                   linewidth=1, label="mean")
        if (reference or {}).get(variant) is not None:
            ax.axvline(reference[variant], color="black", linestyle=":", linewidth=1.5,
                       label="paper")
        ax.set_ylabel(f"{variant}\n(n={int(count.sum())})")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    axes[-1].xaxis.set_major_locator(MaxNLocator(nbins=6))
    axes[-1].set_xlabel(metric)
    if any(v is not None for v in (reference or {}).values()):
        figure.legend(*axes[0].get_legend_handles_labels(), loc="outside lower center",
                      ncols=2, fontsize="small", frameon=False)  # off the data
    figure.suptitle(title or f"{metric} over runs")
    figure.savefig(out_png, dpi=120)
    return edges, counts
