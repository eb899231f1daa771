"""HyperGrid (Tay et al., "HyperGrid Transformers"):
task-conditioned gating of a projection's *weights*, block by block.

For a projection ``W ∈ R^{n_in×n_out}`` (Keras layout, input rows)::

    T′ = the conditioning vector                                  eq. 6
    Ĝ  = σ(r cᵀ) ∈ R^{d_r×d_c}                                     eqs. 3-5
    Y  = X (ψ(Ĝ) ⊙ W) + X W (+ b)                                  eq. 7 (residual)

**ψ, the tiling choice.** ψ expands Ĝ into contiguous blocks: block ``(i, j)`` of
``W`` (rows ``i·n_in/d_r ...``, columns ``j·n_out/d_c ...``) is scaled by ``Ĝ[i, j]``,
i.e. ``ψ(Ĝ) = kron(Ĝ, 1_{(n_in/d_r)×(n_out/d_c)})``. The paper's "repeat vector
function" could also be read as tiling (``np.tile``); contiguous blocks keep each
gate on a contiguous group of input features and output units.

**Orientation, which axis d_r splits.** The paper gives two readings that disagree
for the second FFN matrix (d_f → d_m). Its text calls d_r the grid size of the
"fan-in" and d_c of the "fan-out" (s.2.1.1, s.3.1.4): ``orientation="fan"`` (our
default), d_r splits the inputs ``n_in`` and d_c the outputs ``n_out``. Its eq. 3
writes ``W ∈ R^{d_m×d_f}`` (eq. 1: ``Y = Wx``, rows are outputs), asks ``d_m mod d_r =
0`` and ``d_f mod d_c = 0`` and repeats Ĝ ``d_m/d_r`` times on the row axis:
``orientation="eq3"``, d_r splits the outputs and d_c the inputs, i.e. the grid laid
over the Keras kernel is Ĝᵀ. At T5-base a 32×128 grid on FFN2 gives blocks of 96×6
(inputs × outputs) under ``"fan"`` and 24×24 under ``"eq3"`` (:func:`block_shape`).
Both must divide.

**Modes** (paper Table 4): ``"L2"`` r = L_r T′, c = L_c T′; ``"LG"`` r = L_r T′, c = G_c
(a global vector); ``"GL"`` r = G_r, c = L_c T′; ``"L"`` the one-axis gate of eq. 2,
``Ĝ = σ(L_r T′) 1ᵀ`` (grid ``(d_r, 1)``: blocks along d_r's axis). No biases. Added
parameters per layer: L_r ``d·d_r``, G_r ``d_r``, L_c ``d·d_c``, G_c ``d_c`` with
``d`` the width of T′ (the model width): LG ``d·d_r + d_c`` (the paper's figure),
GL ``d_r + d·d_c``, L² ``d·(d_r + d_c)``. The paper writes ``d_f·d_c`` for the
column hypernetwork of GL and L², which would need a d_f-wide input that eqs. 3-6
never define; with T′ ∈ R^{d_m} the matrix has ``d_m·d_c`` entries. Plus the
conditioning's own weights (below). Table 7's variants: ``scalar`` pools Ĝ to its
mean (one gate for the whole matrix); a max-grid is ``grid = (n_in, n_out)`` with
``materialise=True`` (``(n_out, n_in)`` with ``orientation="eq3"``).

**Conditioning** (:class:`TaskConditioning`), the source of T′:

- ``"mhsa"`` (the paper, eq. 6): a learned task embedding ``T ∈ R^d`` per task and
  per layer, and a multi-head attention of its own whose query is T and whose
  keys and values are ``[T; X]``, X the input of the sub-layer whose projection is
  replaced (e.g. the FFN input). The host passes X as ``conditioning["sequence"]``
  [B, L, d] and ``conditioning["sequence_mask"]`` bool [B, Lq, L]: with Lq = 1 (a
  bidirectional stack: the paper's ``MHSA([T; X])[0]``) T′ is one vector per
  example; with a causal mask (Lq = L) T′ at position i attends to T and X≤i only,
  so no position sees later tokens (a decoder). Such a host cannot decode with a
  key/value cache (past inputs are not kept), which is why NeMoT's sets, which
  decode with one, do not offer these keys and refuse this source.
- ``"self_attention"`` (eq. 6 with no new attention weights, which the paper's
  parameter counts imply): the host layer's *own* self-attention, its weights
  unchanged, computes the output at a task token T (the host's, one per layer)
  prepended to its input, and passes it as ``conditioning["task_attention"]``
  ([B, d], or [B, L, d] in a causal stack, as above). The hypernetwork adds no
  conditioning weights. NeMoT's sets do not offer it (the T5 reproduction does).
- ``"task"``: ``T′ = T``, the task embedding alone: one grid per task, safe in a
  causal stack and with a cache (NeMoT's vanilla and neuromodulatory sets).
- ``"context"``: ``T′ = conditioning["context"]``, NeMoT's neuromodulatory output
  at the task token (the output set; causal-safe: in ``<dec>`` mode the auxiliary
  rows of the NM set attend to auxiliary columns only).

**Efficient product** (:func:`grid_product`): no per-example weight is formed. With
``x → (B, L, d_r, n_in/d_r)`` and ``W → (d_r, n_in/d_r, d_c, n_out/d_c)``, one einsum
gives ``z`` (B, L, d_r, d_c, n_out/d_c) at the FLOPs of XW (and d_r× its output
memory); ``Y = Σ_r (1 + Ĝ[b, r, c]) z[b, l, r, c, :]``, the residual folded into the
weights (Σ_r z = XW).

**Output gating** (:class:`OutputGate`, kind ``"hypergrid_og"``, paper eq. 8 and
Table 4's OG rows): ``φ(X W1 + b1) ⊙ ψ(σ(U T′))``, the FFN activation gated by ``n``
task-conditioned gates, each repeated over a contiguous block of d_ff/n units
(OG(16) is ``gates=16``); the same conditioning sources as HyperGrid.

Example (a NeMoT config)::

    [[model.modulation]]
    kind = "hypergrid"
    sets = ["output"]
    mode = "LG"
    grid = [4, 8]
    conditioning = "context"
"""

import keras
from keras import ops

from nemot.modulation.base import (SEQUENCE_KEYS, TASK_ATTENTION_KEY, DenseModulation,
                                   Modulation, per_task, require)

MODES = ("L2", "LG", "GL", "L")
CONDITIONINGS = ("mhsa", "self_attention", "task", "context")
ORIENTATIONS = ("fan", "eq3")
# Table 7's placements -> the projections of nemot.layers.TransformerLayer they replace.
PLACEMENTS = {
    "ffn2": ("feedforward_output_dense",),
    "ffn1": ("feedforward_intermediate_dense",),
    "ffn": ("feedforward_intermediate_dense", "feedforward_output_dense"),
    "qkv": ("query", "key", "value"),
    "all": ("query", "key", "value", "feedforward_intermediate_dense",
            "feedforward_output_dense"),
}


def _choice(name, value, choices):
    if value not in choices:
        raise ValueError(f"{name}={value!r}: expected one of {tuple(choices)}")
    return value


def _positive_pair(name, value):
    pair = tuple(value) if isinstance(value, (list, tuple)) else ()
    if len(pair) != 2 or not all(isinstance(v, int) and not isinstance(v, bool) and v > 0
                                 for v in pair):
        raise ValueError(f"{name}={value!r}: expected two positive integers (d_r, d_c)")
    return pair


def _initializer(initializer, default):
    return keras.initializers.get(default if initializer is None else initializer)


def kernel_splits(grid, orientation="fan"):
    """The grid's splits of the kernel ``[n_in, n_out]``: (d_r, d_c), or (d_c, d_r) for
    ``orientation="eq3"`` (see the module docstring)."""
    d_r, d_c = grid
    return (d_r, d_c) if _choice("orientation", orientation, ORIENTATIONS) == "fan" else (d_c, d_r)


def check_divides(grid, n_in, n_out, who="HyperGrid", orientation="fan"):
    """A clear error unless the grid (d_r, d_c) splits [n_in, n_out] into whole blocks."""
    splits_in, splits_out = kernel_splits(grid, orientation)
    if n_in % splits_in or n_out % splits_out:
        axes = "n_in % d_r == 0 and n_out % d_c == 0" if orientation == "fan" else \
            "n_out % d_r == 0 and n_in % d_c == 0 (orientation 'eq3')"
        raise ValueError(f"{who}: grid (d_r, d_c) = {tuple(grid)} does not divide the "
                         f"projection [n_in, n_out] = [{n_in}, {n_out}]: expected {axes}")


def block_shape(grid, n_in, n_out, orientation="fan"):
    """(inputs, outputs) of one block of ψ(Ĝ) over a ``[n_in, n_out]`` kernel.

    Example:
        >>> block_shape((32, 128), 3072, 768), block_shape((32, 128), 3072, 768, "eq3")
        ((96, 6), (24, 24))
    """
    check_divides(grid, n_in, n_out, orientation=orientation)
    splits_in, splits_out = kernel_splits(grid, orientation)
    return n_in // splits_in, n_out // splits_out


def grid_product(x, kernel, grid, residual=True, materialise=False):
    """``X (ψ(Ĝ) ⊙ W) + X W`` (the second term only with ``residual``), without a per-example
    weight unless ``materialise``.

    Args:
        x: [B, L, n_in].
        kernel: W, [n_in, n_out].
        grid: Ĝ laid over the kernel, [B, d_r, d_c] (one grid per example) or
            [B, L, d_r, d_c] (per position); [..., d_c, d_r] (Ĝᵀ) in the ``"eq3"``
            orientation.
        residual: add ``X W`` (eq. 7).
        materialise: form ``(residual + ψ(Ĝ_b)) ⊙ W`` per example and multiply (needs a
            per-example grid); the cheaper path when d_r·L exceeds n_in, e.g. a max-grid.

    Returns:
        [B, L, n_out].

    Example:
        >>> y = grid_product(ops.ones((2, 5, 8)), ops.ones((8, 6)), ops.ones((2, 4, 3)))
    """
    n_in, n_out = kernel.shape
    d_r, d_c = grid.shape[-2:]
    check_divides((d_r, d_c), n_in, n_out)
    kernel = ops.cast(kernel, x.dtype)
    weights = ops.cast(grid, x.dtype) + (1.0 if residual else 0.0)
    if materialise:
        if len(grid.shape) != 3:
            raise ValueError(f"materialise=True needs one grid per example [B, d_r, d_c], got "
                             f"shape {tuple(grid.shape)}")
        blocks = ops.repeat(ops.repeat(weights, n_in // d_r, axis=1), n_out // d_c, axis=2)
        return ops.einsum("bli,bio->blo", x, blocks * kernel[None])
    batch, length = ops.shape(x)[0], ops.shape(x)[1]
    xr = ops.reshape(x, (batch, length, d_r, n_in // d_r))
    wr = ops.reshape(kernel, (d_r, n_in // d_r, d_c, n_out // d_c))
    z = ops.einsum("blrk,rkcm->blrcm", xr, wr)
    if len(grid.shape) == 3:
        y = ops.einsum("blrcm,brc->blcm", z, weights)
    else:
        y = ops.einsum("blrcm,blrc->blcm", z, weights)
    return ops.reshape(y, (batch, length, n_out))


class TaskConditioning(keras.layers.Layer):
    """T′, the vector a hypernetwork reads: from an MHSA over [T; X] (an attention of
    its own, or the host layer's self-attention), the task embedding T, or the host's
    ``context`` (see the module docstring).

    Args:
        source: ``"mhsa"``, ``"self_attention"``, ``"task"`` or ``"context"``.
        num_tasks: rows of the task embedding.
        heads: attention heads of the ``"mhsa"`` source (the paper does not give its
            size).
        key_dim: size of each head; None: d / heads (a standard MHSA, 4d² + 4d weights).
            The paper calls HyperGrid's added parameters negligible, which a full MHSA per
            layer is not (+26% at T5-base); a small ``key_dim`` gives a light one.

    Call :meth:`vector` (after ``build(d)``) with the host's conditioning dict; it
    returns [B, d], or [B, L, d] for a per-position (causal) mask.

    Example:
        >>> cond = TaskConditioning("task", num_tasks=3)
        >>> cond.build(16)
        >>> cond.vector({"task_index": ops.array([0, 2])}).shape
        TensorShape([2, 16])
    """

    def __init__(self, source="mhsa", num_tasks=1, heads=1, key_dim=None, **kwargs):
        super().__init__(**kwargs)
        self.source = _choice("conditioning", source, CONDITIONINGS)
        self.num_tasks = int(num_tasks)
        self.heads = int(heads)
        self.key_dim = key_dim

    @staticmethod
    def needs(source):
        """The conditioning keys ``source`` reads."""
        return {"mhsa": ("task_index", *SEQUENCE_KEYS),
                "self_attention": (TASK_ATTENTION_KEY,), "task": ("task_index",),
                "context": ("context",)}[_choice("conditioning", source, CONDITIONINGS)]

    def build(self, d_model):
        self.d_model = int(d_model)
        if self.source in ("mhsa", "task"):
            self.task_embedding = self.add_weight((self.num_tasks, self.d_model),
                                                  initializer="uniform", name="task_embedding")
        if self.source == "mhsa":
            if self.heads < 1 or (self.key_dim is None and self.d_model % self.heads):
                raise ValueError(f"heads={self.heads}: expected a divisor of the model width "
                                 f"{self.d_model}")
            self.attention = keras.layers.MultiHeadAttention(
                self.heads, self.key_dim or self.d_model // self.heads, name="attention",
                dtype=self.dtype_policy)
            self.attention.build((None, None, self.d_model), (None, None, self.d_model))
        self.built = True

    def vector(self, conditioning, who="TaskConditioning"):
        if self.source == "context":
            return require(conditioning, "context", who)
        if self.source == "self_attention":
            return require(conditioning, TASK_ATTENTION_KEY, who)
        task = per_task(self.task_embedding, require(conditioning, "task_index", who))
        if self.source == "task":
            return task
        sequence = require(conditioning, "sequence", who)
        mask = ops.cast(require(conditioning, "sequence_mask", who), "bool")
        task = ops.cast(task, sequence.dtype)[:, None, :]
        queries = ops.shape(mask)[1]
        keys = ops.concatenate([task, sequence], axis=1)
        # T itself is always visible, so no row is fully masked.
        mask = ops.concatenate([ops.ones((ops.shape(mask)[0], queries, 1), "bool"), mask], axis=-1)
        query = ops.broadcast_to(task, (ops.shape(task)[0], queries, self.d_model))
        out = self.attention(query, keys, attention_mask=mask)
        return out[:, 0] if mask.shape[1] == 1 else out

    def get_config(self):
        config = super().get_config()
        config.update(source=self.source, num_tasks=self.num_tasks, heads=self.heads,
                      key_dim=self.key_dim)
        return config


class HyperGrid(keras.layers.Layer):
    """The hypernetwork of one projection: Ĝ = σ(r cᵀ) from the conditioning.

    Args:
        grid: (d_r, d_c).
        mode: ``"L2"``, ``"LG"``, ``"GL"`` or ``"L"`` (grid (d_r, 1)).
        conditioning: the source of T′ (:class:`TaskConditioning`).
        num_tasks: tasks of the host.
        heads, key_dim: of the ``"mhsa"`` conditioning.
        scalar: pool Ĝ to its mean (Table 7's "scalar HyperGrid").
        initializer: of L_r, L_c, G_r, G_c; default Glorot-uniform matrices and G = 1.
            All zeros gives Ĝ = 0.5 everywhere, but no gradient ever leaves that
            point (each factor's gradient is proportional to the other factor).
        orientation: ``"fan"`` (d_r splits the projection's inputs) or ``"eq3"`` (its
            outputs); see the module docstring.

    Call :meth:`grid` (after ``build(d)``): [B, d_r, d_c] or [B, L, d_r, d_c];
    :meth:`over_kernel` lays it over the kernel [n_in, n_out] (transposed for ``"eq3"``).

    Example:
        >>> hg = HyperGrid((4, 2), mode="LG", conditioning="task", num_tasks=2)
        >>> hg.build(16)
        >>> hg.grid({"task_index": ops.array([1])}).shape
        TensorShape([1, 4, 2])
    """

    def __init__(self, grid, mode="LG", conditioning="mhsa", num_tasks=1, heads=1,
                 scalar=False, initializer=None, key_dim=None, orientation="fan", **kwargs):
        super().__init__(**kwargs)
        self.grid_shape = _positive_pair("grid", grid)
        self.mode = _choice("mode", mode, MODES)
        if mode == "L" and self.grid_shape[1] != 1:
            raise ValueError(f"mode 'L' gates blocks along d_r only: expected grid "
                             f"(d_r, 1), got {self.grid_shape}")
        self.orientation = _choice("orientation", orientation, ORIENTATIONS)
        self.scalar = bool(scalar)
        self.initializer = initializer
        self.conditioning = TaskConditioning(conditioning, num_tasks, heads, key_dim,
                                             name="conditioning", dtype=self.dtype_policy)

    def build(self, d_model):
        self.conditioning.build(d_model)
        d_r, d_c = self.grid_shape
        matrix = _initializer(self.initializer, "glorot_uniform")
        vector = _initializer(self.initializer, "ones")
        if self.mode in ("L2", "LG", "L"):
            self.rows = self.add_weight((d_model, d_r), initializer=matrix, name="local_rows")
        else:
            self.rows = self.add_weight((d_r,), initializer=vector, name="global_rows")
        if self.mode in ("L2", "GL"):
            self.columns = self.add_weight((d_model, d_c), initializer=matrix, name="local_columns")
        elif self.mode == "LG":
            self.columns = self.add_weight((d_c,), initializer=vector, name="global_columns")
        self.built = True

    @staticmethod
    def _factor(weight, t):
        """L T′ (local), or the global vector itself (broadcast in the outer product)."""
        weight = ops.cast(weight, t.dtype)
        return weight if len(weight.shape) == 1 else ops.matmul(t, weight)

    def grid(self, conditioning):
        t = self.conditioning.vector(conditioning, who=f"HyperGrid {self.name!r}")
        r = self._factor(self.rows, t)
        c = ops.ones_like(r[..., :1]) if self.mode == "L" else self._factor(self.columns, t)
        g = ops.sigmoid(r[..., :, None] * c[..., None, :])
        return ops.mean(g, axis=(-2, -1), keepdims=True) if self.scalar else g

    def over_kernel(self, conditioning):
        """Ĝ laid over the kernel [n_in, n_out]: :meth:`grid`, transposed for ``"eq3"``."""
        g = self.grid(conditioning)
        return g if self.orientation == "fan" else ops.swapaxes(g, -1, -2)

    def get_config(self):
        config = super().get_config()
        config.update(grid=list(self.grid_shape), mode=self.mode,
                      conditioning=self.conditioning.source,
                      num_tasks=self.conditioning.num_tasks, heads=self.conditioning.heads,
                      key_dim=self.conditioning.key_dim, scalar=self.scalar,
                      initializer=self.initializer, orientation=self.orientation)
        return config


class HyperGridDense(DenseModulation):
    """A projection of :class:`nemot.layers.TransformerLayer` with HyperGrid weight gating
    (kind ``"hypergrid"``): ``Y = X((residual + ψ(Ĝ)) ⊙ W) + b``.

    Owns ``kernel`` and ``bias`` exactly as the plain projection (pretrained weights
    load); the hypernetwork reads T′ of the model width: the output width of the
    FFN's second projection, the input width of the others.

    Args:
        equation, output_shape, bias_axes: of the replaced projection (from the host).
        grid: (d_r, d_c); both must divide the projection's [n_in, n_out].
        mode: ``"L2"``, ``"LG"``, ``"GL"`` or ``"L"``.
        placement: ``"ffn2"`` (default, the paper), ``"ffn1"``, ``"ffn"`` (both),
            ``"qkv"`` or ``"all"`` (Table 7): which projections the kind replaces.
        conditioning: ``"mhsa"``, ``"task"`` or ``"context"``.
        heads, key_dim: of the ``"mhsa"`` conditioning (:class:`TaskConditioning`).
        residual: add ``XW`` (eq. 7; the paper's default, for a pretrained W).
        scalar: Table 7's scalar HyperGrid.
        materialise: per-example weights instead of the blockwise einsum (max-grid).
        initializer: of the grid weights (see :class:`HyperGrid`).
        orientation: ``"fan"`` (d_r splits the inputs) or ``"eq3"`` (the outputs).

    Example:
        >>> layer = HyperGridDense("abc,cd->abd", (None, 8), "d", grid=(4, 2), mode="LG",
        ...                        conditioning="task", num_tasks=2,
        ...                        name="feedforward_output_dense")
        >>> layer.build((None, None, 16))
        >>> y = layer(ops.ones((2, 3, 16)), conditioning={"task_index": ops.array([0, 1])})
    """

    def __init__(self, equation, output_shape, bias_axes=None, grid=(8, 8), mode="LG",
                 placement="ffn2", conditioning="mhsa", heads=1, residual=True, scalar=False,
                 materialise=False, initializer=None, key_dim=None, orientation="fan",
                 **kwargs):
        super().__init__(equation, output_shape, bias_axes, **kwargs)
        self.placement = _choice("placement", placement, PLACEMENTS)
        self.residual = bool(residual)
        self.materialise = bool(materialise)
        self.hypergrid = HyperGrid(grid, mode, conditioning, self.num_tasks, heads, scalar,
                                   initializer, key_dim, orientation, name="hypergrid",
                                   dtype=self.dtype_policy)

    @classmethod
    def needs(cls, options):
        return TaskConditioning.needs(options.get("conditioning", "mhsa"))

    @classmethod
    def replaces(cls, options):
        return PLACEMENTS[_choice("placement", options.get("placement", "ffn2"), PLACEMENTS)]

    def build(self, input_shape):
        super().build(input_shape)
        check_divides(self.hypergrid.grid_shape, self.input_dim, self.units,
                      who=f"HyperGridDense {self.name!r}", orientation=self.hypergrid.orientation)
        width = self.units if self.name == "feedforward_output_dense" else self.input_dim
        self.hypergrid.build(width)

    def call(self, x, conditioning=None):
        grid = self.hypergrid.over_kernel(conditioning)
        y = grid_product(x, self.kernel_matrix(), grid, self.residual, self.materialise)
        return self.add_bias(self.to_output(y))

    def get_config(self):
        # Hosts rebuild their modulations from the model config; this records the options.
        config = super().get_config()
        hg = self.hypergrid.get_config()
        config.update({k: hg[k] for k in ("grid", "mode", "conditioning", "heads", "key_dim",
                                          "scalar", "initializer", "orientation")})
        config.update(placement=self.placement, residual=self.residual,
                      materialise=self.materialise)
        return config


class OutputGate(Modulation):
    """Output gating, the paper's OG ablation (eq. 8; kind ``"hypergrid_og"``):
    ``φ(h) ⊙ ψ(σ(U T′))`` in place of the FFN activation ``φ(h)``.

    Args:
        gates: n, the number of gates (each repeated over a contiguous block of
            d_ff / n units); None: one per unit (OG), 16 / 32 / 64: Table 4's OG(n).
        conditioning: the source of T′ (:class:`TaskConditioning`).
        heads, key_dim: of the ``"mhsa"`` conditioning.

    Example:
        >>> og = OutputGate(gates=4, conditioning="task", num_tasks=2)
        >>> og.build((None, None, 8), (None, None, 16))
        >>> y = og(h, x, conditioning={"task_index": ops.array([0, 1])},
        ...        activation=keras.activations.relu)
    """

    site = "activation"

    def __init__(self, gates=None, conditioning="mhsa", heads=1, key_dim=None, **kwargs):
        super().__init__(**kwargs)
        self.gates = gates
        self.conditioning = TaskConditioning(conditioning, self.num_tasks, heads, key_dim,
                                             name="conditioning", dtype=self.dtype_policy)

    @classmethod
    def needs(cls, options):
        return TaskConditioning.needs(options.get("conditioning", "mhsa"))

    def build(self, h_shape, x_shape):
        d_ff = int(h_shape[-1])
        gates = d_ff if self.gates is None else self.gates
        if not isinstance(gates, int) or isinstance(gates, bool) or gates < 1 or d_ff % gates:
            raise ValueError(f"OutputGate: gates={self.gates!r}: expected a positive divisor of "
                             f"the FFN width {d_ff} (or None for one gate per unit)")
        self.conditioning.build(int(x_shape[-1]))
        self.kernel = self.add_weight((int(x_shape[-1]), gates), initializer="glorot_uniform",
                                      name="kernel")
        self.block = d_ff // gates
        self.built = True

    def call(self, h, x, conditioning, activation, training=None):
        t = self.conditioning.vector(conditioning, who=f"OutputGate {self.name!r}")
        gate = ops.sigmoid(ops.matmul(t, ops.cast(self.kernel, t.dtype)))
        gate = ops.repeat(gate, self.block, axis=-1)
        if len(gate.shape) == 2:
            gate = gate[:, None, :]
        return activation(h) * ops.cast(gate, h.dtype)

    def get_config(self):
        config = super().get_config()
        config.update(gates=self.gates, conditioning=self.conditioning.source,
                      heads=self.conditioning.heads, key_dim=self.conditioning.key_dim)
        return config
