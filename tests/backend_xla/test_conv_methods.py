"""Every convolution formulation of backend_xla.ops.conv_methods against two independent truths:
a direct numpy convolution written here and ``jax.lax.conv_general_dilated``."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax import lax

from backend_xla.ops.conv_methods import METHODS, conv2d, winograd_weights

F32_ATOL = 1e-4  # f32 sums of ≤ 1,008 products of O(1) values; Winograd F(4×4) rounds a bit more
BF16_RTOL = 5e-2  # bf16 keeps 8 mantissa bits: ~0.4 % per rounding, relative to the output scale


def numpy_conv(x, w, b=None, strides=(1, 1), pads=(0, 0, 0, 0), dilations=(1, 1), group=1):
    """Direct ONNX Conv in float64 numpy: x [N,C,H,W], w [O, C/group, KH, KW] → [N,O,OH,OW]."""
    x = np.asarray(x, np.float64)
    w = np.asarray(w, np.float64)
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    pt, pl, pb, pr = pads
    xp = np.pad(x, ((0, 0), (0, 0), (pt, pb), (pl, pr)))
    sh, sw = strides
    dh, dw = dilations
    oh = (h + pt + pb - dh * (kh - 1) - 1) // sh + 1
    ow = (wd + pl + pr - dw * (kw - 1) - 1) // sw + 1
    og = o // group
    y = np.zeros((n, o, oh, ow))
    for g in range(group):
        xs = xp[:, g * cg:(g + 1) * cg]
        for ky in range(kh):
            for kx in range(kw):
                win = xs[:, :, ky * dh: ky * dh + sh * (oh - 1) + 1: sh,
                         kx * dw: kx * dw + sw * (ow - 1) + 1: sw]  # [N, cg, OH, OW]
                y[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", win,
                                                       w[g * og:(g + 1) * og, :, ky, kx])
    if b is not None:
        y += np.asarray(b, np.float64)[None, :, None, None]
    return y


def lax_conv(x, w, strides, pads, dilations, group):
    pt, pl, pb, pr = pads
    return np.asarray(lax.conv_general_dilated(
        jnp.asarray(x), jnp.asarray(w), strides, ((pt, pb), (pl, pr)), rhs_dilation=dilations,
        dimension_numbers=("NCHW", "OIHW", "NCHW"), feature_group_count=group,
        precision=lax.Precision.HIGHEST))


# (n, cin, h, w, cout, k, strides, pads, dilations, group): the lc0 cases plus every attribute.
CASES = [
    (3, 16, 8, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),   # lc0 tower conv, odd batch
    (9, 8, 8, 8, 8, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),    # batch where auto = Winograd
    (1, 112, 8, 8, 16, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),  # lc0 input conv, batch 1
    (2, 16, 8, 8, 32, (1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),   # value/policy 1×1 head conv
    (2, 5, 7, 9, 3, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),     # odd board (Winograd crops)
    (2, 4, 6, 7, 5, (3, 3), (1, 1), (0, 0, 0, 0), (1, 1), 1),     # valid padding
    (1, 4, 6, 6, 5, (3, 3), (1, 1), (2, 0, 1, 3), (1, 1), 1),     # asymmetric pads
    (2, 3, 7, 7, 4, (1, 3), (1, 1), (0, 1, 0, 1), (1, 1), 1),     # non-square kernel
    (2, 4, 9, 9, 6, (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1),     # stride 2 → lax fallback
    (1, 4, 9, 9, 6, (3, 3), (1, 1), (2, 2, 2, 2), (2, 2), 1),     # dilation 2 → lax fallback
    (2, 6, 8, 8, 4, (3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2),     # groups → lax fallback
]


def _data(case, seed=0):
    n, cin, h, wd, cout, (kh, kw), strides, pads, dil, group = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, cin, h, wd)).astype(np.float32)
    w = (rng.standard_normal((cout, cin // group, kh, kw)) / np.sqrt(cin * kh * kw / group))
    b = rng.standard_normal(cout).astype(np.float32)
    return x, w.astype(np.float32), b, dict(strides=strides, pads=pads, dilations=dil, group=group)


def _case_id(c):
    return f"n{c[0]}c{c[1]}h{c[2]}w{c[3]}k{c[5]}s{c[6]}p{c[7]}d{c[8]}g{c[9]}"


def _check(case, method, layout):
    x, w, b, attrs = _data(case)
    want = numpy_conv(x, w, b, **attrs)
    assert np.allclose(lax_conv(x, w, attrs["strides"], attrs["pads"], attrs["dilations"],
                                attrs["group"]) + b[None, :, None, None], want, atol=F32_ATOL)
    xin = x if layout == "NCHW" else x.transpose(0, 2, 3, 1)
    got = jax.jit(lambda x: conv2d(x, w, b, layout=layout, method=method, **attrs))(xin)
    got = np.asarray(got)
    if layout == "NHWC":
        got = got.transpose(0, 3, 1, 2)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, atol=F32_ATOL, rtol=0)


PLAIN = CASES[:8]  # stride 1, dilation 1, group 1: every matmul method really runs
FALLBACK = CASES[8:]  # strides / dilations / groups: matmul methods must fall back to lax


def _plain_matrix() -> list:
    """Every case by every method; CI runs a cover of the matrix (every method on the tower
    conv, every case with one method, in turn), --run-slow all of it: these are the benchmark's
    formulations (docs/performance.md), and each program takes 0.2-3 s to compile."""
    return [
        pytest.param(case, method, id=f"{_case_id(case)}-{method}",
                     marks=[pytest.mark.slow]
                     if case is not CASES[0] and j != i % len(METHODS) else [])
        for i, case in enumerate(PLAIN)
        for j, method in enumerate(METHODS)
    ]


@pytest.mark.parametrize("case,method", _plain_matrix())
def test_f32_matches_numpy_and_lax(case, method):
    _check(case, method, "NCHW")


def _slow_winograd4(methods):
    """winograd4's programs compile 3-5x longer than winograd2's, whose path they share: CI runs
    winograd4 in the matrix above, --run-slow here too."""
    return [pytest.param(m, marks=pytest.mark.slow) if m == "winograd4" else m for m in methods]


@pytest.mark.parametrize("method", _slow_winograd4(METHODS))
def test_f32_nhwc_layout(method):
    _check(CASES[0], method, "NHWC")
    _check(CASES[5], method, "NHWC")


@pytest.mark.parametrize("method", ["auto", "im2col", "winograd4"])
@pytest.mark.parametrize("case", FALLBACK, ids=_case_id)
def test_unsupported_attributes_fall_back_correctly(case, method):
    _check(case, method, "NCHW" if case[-1] == 1 else "NHWC")


@pytest.mark.parametrize(
    "method", _slow_winograd4(["im2col", "im2row", "shifted", "winograd2", "winograd4"]))
def test_traced_weights_and_relu(method):
    """Weights passed as jit arguments (transform traced, not folded) and the fused ReLU."""
    x, w, b, attrs = _data(CASES[0], seed=1)
    want = np.maximum(numpy_conv(x, w, b, **attrs), 0)
    got = jax.jit(lambda x, w, b: conv2d(x, w, b, method=method, activation="relu", **attrs))(
        x, jnp.asarray(w), jnp.asarray(b))
    np.testing.assert_allclose(np.asarray(got), want, atol=F32_ATOL, rtol=0)


@pytest.mark.parametrize("method", _slow_winograd4(["lax", "im2col", "im2row", "shifted",
                                                    "winograd2", "winograd4"]))
def test_bf16_close_to_f64(method):
    x, w, b, attrs = _data(CASES[0], seed=2)
    want = numpy_conv(x, w, b, **attrs)
    got = jax.jit(lambda x: conv2d(x, w, b, method=method, **attrs))(jnp.asarray(x, jnp.bfloat16))
    assert got.dtype == jnp.bfloat16
    err = np.abs(np.asarray(got, np.float64) - want).max() / np.abs(want).max()
    assert err < BF16_RTOL, err


def test_winograd_filter_transform_is_exact_inverse_of_direct():
    """U = G g Gᵀ with Aᵀ[(U ⊙ Bᵀ d B)]A = correlation of one tile: check on a single 6×6 tile."""
    from backend_xla.ops.conv_methods import WINOGRAD

    rng = np.random.default_rng(3)
    g = rng.standard_normal((1, 1, 3, 3))
    d = rng.standard_normal((6, 6))
    _, bt, _, at = WINOGRAD["winograd4"]
    u = winograd_weights(g, "winograd4").reshape(6, 6)
    y = at @ (u * (bt @ d @ bt.T)) @ at.T
    direct = np.array([[np.sum(d[i:i + 3, j:j + 3] * g[0, 0]) for j in range(4)]
                       for i in range(4)])
    np.testing.assert_allclose(y, direct, atol=1e-10)


def test_auto_picks_winograd_only_for_mid_batch_tower_convs():
    from backend_xla.ops.conv_methods import choose_method

    tower = ((64, 64, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1)
    assert choose_method(*tower, batch=32) == "winograd2"
    assert choose_method(*tower, batch=256) == "lax"
    assert choose_method(*tower) == "lax"
    assert choose_method((64, 64, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 1, batch=32) == "lax"
    assert choose_method((64, 32, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 2, batch=32) == "lax"
    assert choose_method((32, 64, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1, batch=32) == "lax"


def test_bad_arguments_are_rejected():
    x = np.zeros((1, 2, 4, 4), np.float32)
    w = np.zeros((2, 2, 3, 3), np.float32)
    with pytest.raises(ValueError):
        conv2d(x, w, layout="NWHC")
    with pytest.raises(ValueError):
        conv2d(x, w, method="fft")
    with pytest.raises(ValueError):
        conv2d(x, w, pads=[1, 1])
    assert ml_dtypes.bfloat16  # bf16 type used above comes from ml_dtypes via jax
