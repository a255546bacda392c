"""2-D convolution in ONNX semantics, in several XLA formulations tuned for CPU.

The ``Conv`` handler (:mod:`backend_xla.ops.conv`) uses :func:`conv2d` for ``conv_method`` other
than ``lax``; the benchmarks (``bin/xlazero_perf``) and the hand-built Maia forward pass call
it directly.

XLA's CPU convolution (``lax.conv_general_dilated``) runs on one thread and reaches well under
half of the CPU matrix-multiply rate, while XLA's CPU ``dot`` is multi-threaded and near peak.
Every fast method here therefore rewrites a convolution as matrix multiplies:

``"im2col"``    pad, take the KH·KW shifted windows, concatenate them on the channel axis and do
                one ``[N·OH·OW, KH·KW·Cin] × [KH·KW·Cin, Cout]`` matmul.
``"im2row"``    half-way: concatenate only the KW horizontal shifts (K = KW·Cin) and let one
                matmul produce all KH vertical taps at once (N = KH·Cout); the KH row-shifted
                partial outputs are summed by one fused element-wise loop. 3× instead of 9× the
                input is materialised.
``"shifted"``   the same windows, but one ``[N·OH·OW, Cin] × [Cin, Cout]`` matmul per window, summed.
``"winograd2"`` / ``"winograd4"``  Winograd F(2×2,3×3) / F(4×4,3×3) (3×3, stride 1, dilation 1,
                group 1 only). The filter transform ``U = G g Gᵀ`` is done once, in numpy, when the
                weights are concrete (conversion time); the input and output transforms are fused
                element-wise sums of strided slices; the 16 / 36 per-element products become one
                batched matmul ``[T, N·tiles, Cin] × [T, Cin, Cout]``. lc0's own CPU backend uses
                F(4×4,3×3): on an 8×8 board with padding 1 it is exactly 2×2 tiles of 6×6.
``"lax"``       ``lax.conv_general_dilated`` with dimension numbers for the requested layout.
``"auto"``      the measured best for the case (see :func:`choose_method` and docs/performance.md):
                ``"lax"`` except Winograd F(2×2) for 3×3 tower convs on batches of 8–64.

Layouts: ``layout="NCHW"`` (ONNX's; inputs and outputs NCHW, matmul methods transpose to NHWC and
back around each conv) or ``layout="NHWC"`` (input ``[N, H, W, C]``, output ``[N, OH, OW, Cout]``;
weights are still ONNX OIHW). A converter that keeps activations NHWC between convolutions pays
one transpose at the network input and one before each head instead of two per conv.

All functions accept numpy or JAX arrays and are meant to be called inside ``jax.jit``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax import lax

METHODS = ("auto", "lax", "im2col", "im2row", "shifted", "winograd2", "winograd4")
LAYOUTS = ("NCHW", "NHWC")

# Winograd transform matrices (Lavin & Gray 2015), F(m×m, 3×3) with tile size m + 2.
# F(2×2, 3×3): 4×4 input tiles, 2×2 outputs per tile.
_BT2 = np.array([[1, 0, -1, 0], [0, 1, 1, 0], [0, -1, 1, 0], [0, 1, 0, -1]], dtype=np.float64)
_G2 = np.array([[1, 0, 0], [0.5, 0.5, 0.5], [0.5, -0.5, 0.5], [0, 0, 1]], dtype=np.float64)
_AT2 = np.array([[1, 1, 1, 0], [0, 1, -1, -1]], dtype=np.float64)
# F(4×4, 3×3): 6×6 input tiles, 4×4 outputs per tile (interpolation points 0, ±1, ±2, ∞; the
# matrices lc0's CPU backend uses).
_BT4 = np.array(
    [
        [4, 0, -5, 0, 1, 0],
        [0, -4, -4, 1, 1, 0],
        [0, 4, -4, -1, 1, 0],
        [0, -2, -1, 2, 1, 0],
        [0, 2, -1, -2, 1, 0],
        [0, 4, 0, -5, 0, 1],
    ],
    dtype=np.float64,
)
_G4 = np.array(
    [
        [1 / 4, 0, 0],
        [-1 / 6, -1 / 6, -1 / 6],
        [-1 / 6, 1 / 6, -1 / 6],
        [1 / 24, 1 / 12, 1 / 6],
        [1 / 24, -1 / 12, 1 / 6],
        [0, 0, 1],
    ],
    dtype=np.float64,
)
_AT4 = np.array(
    [[1, 1, 1, 1, 1, 0], [0, 1, -1, 2, -2, 0], [0, 1, 1, 4, 4, 0], [0, 1, -1, 8, -8, 1]],
    dtype=np.float64,
)
WINOGRAD = {"winograd2": (2, _BT2, _G2, _AT2), "winograd4": (4, _BT4, _G4, _AT4)}


def _pair(v: Sequence[int] | int | None, default: int) -> tuple[int, int]:
    if v is None:
        return (default, default)
    if isinstance(v, int):
        return (v, v)
    v = tuple(int(i) for i in v)
    return (v[0], v[1]) if len(v) == 2 else (v[0], v[0])


def _pads4(pads: Sequence[int] | None) -> tuple[int, int, int, int]:
    """ONNX pads ``[top, left, bottom, right]`` (all zero when absent)."""
    if pads is None:
        return (0, 0, 0, 0)
    p = tuple(int(i) for i in pads)
    if len(p) != 4:
        raise ValueError(f"2-D Conv needs 4 pads, got {p}")
    return p[0], p[1], p[2], p[3]


def _xp(a: Any) -> Any:
    """numpy for concrete numpy weights (transform folds at trace time), jax.numpy otherwise."""
    return np if isinstance(a, np.ndarray) else jnp


def is_fast_3x3(w_shape: Sequence[int], strides, pads, dilations, group: int) -> bool:
    """True for the 3×3, stride 1, 'same' padding 1, dilation 1, group 1 conv of lc0 towers."""
    return (
        tuple(w_shape[2:]) == (3, 3)
        and _pair(strides, 1) == (1, 1)
        and _pads4(pads) == (1, 1, 1, 1)
        and _pair(dilations, 1) == (1, 1)
        and group == 1
    )


def choose_method(
    w_shape: Sequence[int],
    strides=None,
    pads=None,
    dilations=None,
    group: int = 1,
    batch: int | None = None,
) -> str:
    """The formulation ``method="auto"`` picks (measurements in docs/performance.md).

    ``"lax"`` (XLA's own convolution, best in NHWC) for every case but one: a 3×3 lc0 tower conv
    on a known batch of 8–64 rows, where Winograd F(2×2) measured 1.2–1.5× faster per conv.
    Whole networks: NHWC ``lax`` convs, split over host devices, were the fastest or tied in every
    run; the matmul formulations lose at large batch because their 9× / 2.25× temporaries
    (37 MB at batch 256) cost more memory traffic and page faults than the FLOPs they save.
    """
    if (
        batch is not None
        and WINOGRAD_BATCH[0] <= batch <= WINOGRAD_BATCH[1]
        and is_fast_3x3(w_shape, strides, pads, dilations, group)
    ):
        return "winograd2"
    return "lax"


WINOGRAD_BATCH = (8, 64)  # batch range where Winograd F(2×2) beat lax per conv (docs)


# ---------------------------------------------------------------- weight preparation


def weights_hwio_flat(w: Any) -> Any:
    """OIHW ``[Cout, Cin, KH, KW]`` → im2col weight ``[KH·KW·Cin, Cout]`` (row = (ky, kx, ci))."""
    xp = _xp(w)
    cout, cin, kh, kw = w.shape
    return xp.transpose(w, (2, 3, 1, 0)).reshape(kh * kw * cin, cout)


def winograd_weights(w: Any, method: str = "winograd4") -> Any:
    """OIHW 3×3 weights → Winograd filter transform ``U = G g Gᵀ`` laid out ``[T, Cin, Cout]``.

    ``T = (m+2)²`` with m = 2 or 4. Computed in float64 numpy when ``w`` is concrete (done once at
    conversion time, no rounding from the transform itself), else with jax.numpy in ``w``'s dtype.
    """
    _, _, g, _ = WINOGRAD[method]
    xp = _xp(w)
    if xp is np:
        u = np.einsum("ak,oikl,bl->abio", g, np.asarray(w, np.float64), g)
        t = g.shape[0]
        return u.reshape(t * t, w.shape[1], w.shape[0]).astype(w.dtype)
    gj = jnp.asarray(g, w.dtype)
    u = jnp.einsum("ak,oikl,bl->abio", gj, w, gj)
    t = g.shape[0]
    return u.reshape(t * t, w.shape[1], w.shape[0])


# ---------------------------------------------------------------- formulations (NHWC core)


def _pad_nhwc(x: Any, pads4: tuple[int, int, int, int]) -> Any:
    pt, pl, pb, pr = pads4
    if pads4 == (0, 0, 0, 0):
        return x
    return jnp.pad(x, ((0, 0), (pt, pb), (pl, pr), (0, 0)))


def _windows(xp_: Any, kh: int, kw: int, oh: int, ow: int) -> list[Any]:
    """The KH·KW shifted ``[N, OH, OW, C]`` windows of a padded NHWC tensor, order (ky, kx)."""
    return [xp_[:, ky : ky + oh, kx : kx + ow, :] for ky in range(kh) for kx in range(kw)]


def _im2col_nhwc(x: Any, w: Any, pads4) -> Any:
    """Stride-1, dilation-1, group-1 conv as one matmul. x NHWC, w OIHW → NHWC."""
    n, h, wd, cin = x.shape
    cout, _, kh, kw = w.shape
    pt, pl, pb, pr = pads4
    oh, ow = h + pt + pb - kh + 1, wd + pl + pr - kw + 1
    wm = weights_hwio_flat(w).astype(x.dtype)
    if (kh, kw) == (1, 1):  # a 1×1 conv is a plain matmul (after any padding)
        cols = _pad_nhwc(x, pads4)
    else:
        cols = jnp.concatenate(_windows(_pad_nhwc(x, pads4), kh, kw, oh, ow), axis=-1)
    y = jnp.dot(cols.reshape(n * oh * ow, kh * kw * cin), wm, preferred_element_type=x.dtype)
    return y.reshape(n, oh, ow, cout)


def _im2row_nhwc(x: Any, w: Any, pads4) -> Any:
    """Stride-1 conv: KW-window concat → one matmul giving all KH taps → sum of row shifts.

    x NHWC ``[N, H, W, Cin]``, w OIHW → NHWC ``[N, OH, OW, Cout]``.
    """
    n, h, wd, cin = x.shape
    cout, _, kh, kw = w.shape
    pt, pl, pb, pr = pads4
    hp = h + pt + pb
    oh, ow = hp - kh + 1, wd + pl + pr - kw + 1
    xp_ = _pad_nhwc(x, pads4)
    rows = jnp.concatenate([xp_[:, :, kx : kx + ow, :] for kx in range(kw)], axis=-1)
    xpw = _xp(w)
    # [kx, ci] rows × [ky, co] columns
    wm = xpw.transpose(w, (3, 1, 2, 0)).reshape(kw * cin, kh * cout).astype(x.dtype)
    z = jnp.dot(rows.reshape(n * hp * ow, kw * cin), wm, preferred_element_type=x.dtype)
    z = z.reshape(n, hp, ow, kh, cout)
    acc = None
    for ky in range(kh):
        term = z[:, ky : ky + oh, :, ky, :]
        acc = term if acc is None else acc + term
    return acc


def _shifted_nhwc(x: Any, w: Any, pads4) -> Any:
    """Stride-1 conv as the sum of KH·KW matmuls of shifted windows. x NHWC, w OIHW → NHWC."""
    n, h, wd, cin = x.shape
    cout, _, kh, kw = w.shape
    pt, pl, pb, pr = pads4
    oh, ow = h + pt + pb - kh + 1, wd + pl + pr - kw + 1
    xp = _xp(w)
    w4 = xp.transpose(w, (2, 3, 1, 0))  # [KH, KW, Cin, Cout]
    acc: Any = None
    for i, win in enumerate(_windows(_pad_nhwc(x, pads4), kh, kw, oh, ow)):
        term = jnp.dot(
            win.reshape(n * oh * ow, cin),
            w4[i // kw, i % kw].astype(x.dtype),
            preferred_element_type=x.dtype,
        )
        acc = term if acc is None else acc + term
    return acc.reshape(n, oh, ow, cout)


def _lincomb(coeffs: np.ndarray, terms: list[Any]) -> Any:
    """``sum_k coeffs[k] · terms[k]`` skipping zeros and multiplying only where |c| ≠ 1."""
    out = None
    for c, t in zip(coeffs, terms):
        if c == 0:
            continue
        if c == 1:
            v = t
        elif c == -1:
            v = -t
        else:
            v = t * np.asarray(c, dtype=t.dtype)
        out = v if out is None else out + v
    return out


def _winograd_nhwc(x: Any, w: Any, method: str, u: Any = None) -> Any:
    """3×3 / stride 1 / pad 1 conv by Winograd F(m×m, 3×3). x NHWC, w OIHW → NHWC.

    ``u``: the filter transform ``winograd_weights(w, method)`` made at load (then ``w`` is only
    read for its shape): from a parameter ``w`` the transform would run on every call.

    Boards whose size is not a multiple of m are zero-padded on the bottom/right and cropped.
    Inputs narrower than float32 (bf16, f16) are transformed and multiplied in float32: the
    transforms' constants (up to ±5, ±8) and cancellations lose too much in 8 mantissa bits
    (F(4×4) measured 12 % max error in bf16 against ~1 % for direct convolution).
    """
    if jnp.dtype(x.dtype).itemsize < 4:
        return _winograd_nhwc(x.astype(jnp.float32), w, method, u).astype(x.dtype)
    m, bt, _, at = WINOGRAD[method]
    a = m + 2  # input tile size
    n, h, wd, cin = x.shape
    cout = w.shape[0]
    th, tw = -(-h // m), -(-wd // m)  # tiles per column / row
    # Pad 1 on top/left (the conv's own), and enough on bottom/right to cover th·m + 2 rows.
    xp_ = jnp.pad(x, ((0, 0), (1, th * m + 1 - h), (1, tw * m + 1 - wd), (0, 0)))
    # V = Bᵀ d B separably, each step one stack along a new leading axis: rows of every tile
    # over the padded width first ([a, N, th, W+2, Cin]), then its columns ([a, a, N, th, tw,
    # Cin]). XLA fuses each step into one loop; sixteen separate sums and a stack of them were
    # sixteen independent fusions, which XLA's executor hands to its thread pool, shared by the
    # host devices: two programs running at once (the search's two batches) then contended.
    span_h, span_w = (th - 1) * m + 1, (tw - 1) * m + 1
    row_terms = [xp_[:, i : i + span_h : m] for i in range(a)]
    rows = jnp.stack([_lincomb(bt[r], row_terms) for r in range(a)])
    col_terms = [rows[:, :, :, j : j + span_w : m] for j in range(a)]
    v = jnp.stack([_lincomb(bt[c], col_terms) for c in range(a)], axis=1)
    v = v.reshape(a * a, n * th * tw, cin)
    u = winograd_weights(w, method) if u is None else u
    u = u.astype(x.dtype) if hasattr(u, "astype") else u
    mm = lax.dot_general(
        v, jnp.asarray(u, x.dtype), (((2,), (1,)), ((0,), (0,))), preferred_element_type=x.dtype
    )  # [T, N·tiles, Cout]
    mm = mm.reshape(a, a, n, th, tw, cout)
    # Y = Aᵀ M A.
    rows_o = [[_lincomb(at[u_], [mm[i, j] for i in range(a)]) for j in range(a)] for u_ in range(m)]
    y = jnp.stack(
        [jnp.stack([_lincomb(at[v_], rows_o[u_]) for v_ in range(m)], axis=3) for u_ in range(m)],
        axis=2,
    )  # [N, th, m, tw, m, Cout]
    y = y.reshape(n, th * m, tw * m, cout)
    return y[:, :h, :wd, :]


def _lax_conv(x, w, strides, pads4, dilations, group, layout):
    pt, pl, pb, pr = pads4
    dn = ("NCHW", "OIHW", "NCHW") if layout == "NCHW" else ("NHWC", "OIHW", "NHWC")
    return lax.conv_general_dilated(
        x,
        jnp.asarray(w, x.dtype),
        window_strides=strides,
        padding=((pt, pb), (pl, pr)),
        rhs_dilation=dilations,
        dimension_numbers=dn,
        feature_group_count=group,
        preferred_element_type=x.dtype,
    )


# ---------------------------------------------------------------- public entry point


def conv2d(
    x: Any,
    w: Any,
    b: Any = None,
    *,
    strides: Sequence[int] | None = None,
    pads: Sequence[int] | None = None,
    dilations: Sequence[int] | None = None,
    group: int = 1,
    layout: str = "NCHW",
    method: str = "auto",
    activation: str | None = None,
    winograd_filter: Any = None,
) -> Any:
    """ONNX ``Conv`` (2-D), optionally followed by ``Relu``.

    x: ``[N, Cin, H, W]`` (layout "NCHW") or ``[N, H, W, Cin]`` (layout "NHWC").
    w: ONNX weights ``[Cout, Cin/group, KH, KW]`` in either layout; numpy weights make every weight
       transform a trace-time constant.
    b: optional ``[Cout]``.
    strides/dilations: ``[sh, sw]`` (default 1); pads: ONNX ``[top, left, bottom, right]``.
    method: one of :data:`METHODS`; a method that cannot do this case (e.g. Winograd on a strided
       conv) falls back to ``"lax"``.
    activation: ``None`` or ``"relu"`` (XLA fuses it with the bias add into one loop).
    winograd_filter: for a Winograd ``method``, ``winograd_weights(w, method)`` made beforehand.
    Returns ``[N, Cout, OH, OW]`` or ``[N, OH, OW, Cout]`` matching ``layout``.
    """
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}, got {method!r}")
    strides_, dil_, pads4 = _pair(strides, 1), _pair(dilations, 1), _pads4(pads)
    x = jnp.asarray(x)
    if method == "auto":
        method = choose_method(w.shape, strides_, pads4, dil_, group, batch=x.shape[0])
    plain = strides_ == (1, 1) and dil_ == (1, 1) and group == 1
    if method in WINOGRAD and not is_fast_3x3(w.shape, strides_, pads4, dil_, group):
        method = "lax"
    if method in ("im2col", "im2row", "shifted") and not plain:
        method = "lax"

    if method == "lax":
        y = _lax_conv(x, w, strides_, pads4, dil_, group, layout)
        channel_axis = 1 if layout == "NCHW" else 3
    else:
        xn = jnp.transpose(x, (0, 2, 3, 1)) if layout == "NCHW" else x
        if method == "im2col":
            y = _im2col_nhwc(xn, w, pads4)
        elif method == "im2row":
            y = _im2row_nhwc(xn, w, pads4)
        elif method == "shifted":
            y = _shifted_nhwc(xn, w, pads4)
        else:
            y = _winograd_nhwc(xn, w, method, winograd_filter)
        channel_axis = 3
    if b is not None:
        shape = [1, 1, 1, 1]
        shape[channel_axis] = -1
        y = y + jnp.asarray(b, y.dtype).reshape(shape)
    if activation == "relu":
        y = jnp.maximum(y, 0)
    elif activation is not None:
        raise ValueError(f"unsupported activation {activation!r}")
    if method != "lax" and layout == "NCHW":
        y = jnp.transpose(y, (0, 3, 1, 2))
    return y
