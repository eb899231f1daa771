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


def plot_gate_differences(gates_by_task, out_png, reference, num_groups=16, masks=None,
                          token_labels=None, title=None):
    """Heat maps of how each task token's :func:`gate_maps` differs from ``reference``'s.

    One panel per other task token: its mean gate minus the reference's, per feature group
    (rows) and text position (columns), on one colour scale symmetric about zero (red: the
    task opens the gate wider). ``token_labels`` names the text positions on the x axis.
    Returns ``{task: difference map}``.
    """
    maps = gate_maps(gates_by_task, num_groups, masks)
    if reference not in maps:
        raise ValueError(f"reference {reference!r} is not one of the task tokens {sorted(maps)}")
    differences = {task: values - maps[reference] for task, values in maps.items()
                   if task != reference}
    if not differences:
        raise ValueError("plot_gate_differences needs a task token besides the reference")
    finite = np.concatenate([d[np.isfinite(d)] for d in differences.values()])
    if finite.size == 0:
        raise ValueError("every gate position is masked out: nothing to draw")
    bound = max(float(np.abs(finite).max()), 1e-12)
    positions = next(iter(maps.values())).shape[0]
    figure = _figure((max(8, 0.45 * positions + 2), 1.4 + 2.4 * len(differences)))
    axes = figure.subplots(len(differences), 1, squeeze=False)[:, 0]
    for axis, (task, values) in zip(axes, differences.items()):
        image = axis.imshow(values.T, aspect="auto", origin="lower", cmap="RdBu_r", vmin=-bound,
                            vmax=bound, interpolation="nearest")
        axis.set_title(f"{task} minus {reference} (largest |difference| "
                       f"{float(np.nanmax(np.abs(values))):.3f})")
        axis.set_ylabel(f"feature group (of {num_groups})")
        if token_labels is not None:
            axis.set_xticks(range(len(token_labels)), token_labels, rotation=60, fontsize=8)
    axes[-1].set_xlabel("text position" if token_labels is None else "text token")
    figure.colorbar(image, ax=list(axes), label="difference of mean gate value")
    figure.suptitle(title or f"How the gates change with the task token (against {reference})")
    figure.savefig(out_png, dpi=110)
    return differences


def plot_curves(curves, out_png, xlabel, ylabel, title=None, log_y=False, markers=None):
    """Lines on one axis: ``curves`` is ``{label: (x values, y values)}`` (NaN values are
    left out); ``markers`` is ``{label: marker}`` for curves drawn as points (e.g. a
    validation loss measured once an epoch). Returns the figure's axis limits."""
    figure = _curves(curves, xlabel, ylabel, title, log_y, markers)
    figure.savefig(out_png, dpi=110)
    axis, = figure.axes
    return axis.get_xlim(), axis.get_ylim()


def _curves(curves, xlabel, ylabel, title, log_y, markers):
    """:func:`plot_curves`'s figure, not yet saved."""
    if not curves:
        raise ValueError("plot_curves: no curves to draw")
    figure = _figure((7, 3.8))
    axis = figure.subplots()
    for label, (xs, ys) in curves.items():
        if len(xs) != len(ys):
            raise ValueError(f"plot_curves: curve {label!r} has {len(xs)} x and {len(ys)} y values")
        points = [(x, y) for x, y in zip(xs, ys) if not math.isnan(float(y))]
        marker = (markers or {}).get(label)
        axis.plot([p[0] for p in points], [p[1] for p in points], label=label,
                  marker=marker or ".", markersize=7 if marker else 3,
                  linestyle="--" if marker else "-")
    if log_y:
        axis.set_yscale("log")
    if all(float(x).is_integer() for xs, _ in curves.values() for x in xs):
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))   # steps, epochs: no 2.5
    axis.set_xlabel(xlabel)
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    if title:
        axis.set_title(title)
    return figure


LOSS_TERMS = {"task_loss": "L1 task", "lm_loss": "L2 language modelling",
              "vanilla_loss": "L3 vanilla set"}


def read_loss_terms(csv_path):
    """The loss terms of a results CSV: ``{"epoch": [...], "<term>": [...], "val_<term>":
    [...]}`` for the terms of :data:`LOSS_TERMS` it has (blank cells are NaN); an error
    naming the file when it has none of them."""
    with open(csv_path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        fields = reader.fieldnames or []
        columns = ["epoch"] + [c for term in LOSS_TERMS for c in (term, f"val_{term}") if c in fields]
        if len(columns) == 1:
            raise ValueError(f"{csv_path}:1: header has none of the loss-term columns "
                             f"{list(LOSS_TERMS)}")
        terms = {column: [] for column in columns}
        for line, row in enumerate(reader, start=2):
            for column in columns:
                terms[column].append(_parse_float(row[column], csv_path, line, column,
                                                  allow_blank=column != "epoch"))
    if not terms["epoch"]:
        raise ValueError(f"{csv_path}: no epoch rows after the header")
    return terms


def plot_loss_terms(csv_path, out_png, steps_per_epoch=None, title=None):
    """The three loss terms of the combined loss (thesis eq. 3.17) per epoch of a results
    CSV: training as solid lines, validation (where the CSV has it) dashed in the same
    colour. With ``steps_per_epoch`` the x axis counts training steps. Returns
    :func:`read_loss_terms`."""
    terms = read_loss_terms(csv_path)
    scale = steps_per_epoch or 1
    xs = [int(epoch) * scale for epoch in terms["epoch"]]
    figure = _figure((7, 3.8))
    axis = figure.subplots()
    for colour, (term, name) in enumerate(LOSS_TERMS.items()):
        for column, style, label in ((term, "-", name), (f"val_{term}", "--", f"{name}, validation")):
            if column in terms and not all(math.isnan(v) for v in terms[column]):
                axis.plot(xs, terms[column], linestyle=style, marker="o", markersize=3,
                          color=f"C{colour}", label=label)
    axis.set_xlabel("training step (epoch end)" if steps_per_epoch else "epoch")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))
    axis.set_ylabel("cross-entropy")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8)
    axis.set_title(title or "The three loss terms: L = L1 + 0.2 L2 + 0.5 L3")
    figure.savefig(out_png, dpi=110)
    return terms


def plot_bars(values, out_png, ylabel, title=None, reference_lines=None, value_format="{:.2f}"):
    """Grouped bars: ``values`` is ``{group: {series: value}}`` (e.g. ``{dataset: {"this
    run": 0.61, "thesis ♠": 0.63}}``; a missing or None value leaves a gap).
    ``reference_lines`` is ``{label: y}`` drawn across (a chance level, an expected count)
    or ``{label: {group: y}}`` drawn over each group. Every bar is labelled with its value.
    Returns the series in the order drawn."""
    figure, series = _bars(values, ylabel, title, reference_lines, value_format)
    figure.savefig(out_png, dpi=110)
    return series


def _bars(values, ylabel, title, reference_lines, value_format):
    """:func:`plot_bars`'s figure, not yet saved, and its series."""
    if not values:
        raise ValueError("plot_bars: no groups to draw")
    series = list(dict.fromkeys(s for by_series in values.values() for s in by_series))
    groups = list(values)
    width = 0.8 / len(series)
    figure = _figure((min(11, max(6, 1.3 * len(groups) * max(1, len(series) / 2) + 2)), 4))
    axis = figure.subplots()
    for k, name in enumerate(series):
        shown = [(g, values[g].get(name)) for g in groups if values[g].get(name) is not None]
        xs = [groups.index(g) - 0.4 + width * (k + 0.5) for g, _ in shown]
        bars = axis.bar(xs, [v for _, v in shown], width, label=name, color=f"C{k}")
        # Upright labels overlap over more than three narrow bars a group: turned there.
        axis.bar_label(bars, [value_format.format(v) for _, v in shown], fontsize=7,
                       padding=2, rotation=90 if len(series) > 3 else 0)
    for k, (label, level) in enumerate((reference_lines or {}).items()):
        style = dict(color="0.2", linestyle=(":", "--", "-.")[k % 3], linewidth=1.2)
        if isinstance(level, dict):
            for g, y in level.items():
                i = groups.index(g)
                axis.hlines(y, i - 0.45, i + 0.45, label=label if g == next(iter(level)) else None,
                            **style)
        else:
            axis.axhline(level, label=label, **style)
    axis.set_xticks(range(len(groups)), groups)
    if len(series) > 3:   # room above the tallest bar for its turned label
        axis.set_ylim(top=axis.get_ylim()[1] * 1.12)
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3, axis="y")
    if len(series) > 1 or reference_lines:  # beside the axes: bars at 100% leave no room
        axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    if title:
        axis.set_title(title)
    return figure, series


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
