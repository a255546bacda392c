"""A hand-built forward pass of lc0 SE-residual networks (Maia) from their ONNX initializers.

This is a measuring stick, not the converter: it shows what throughput the formulations in
:mod:`backend_xla.ops.conv_methods` reach on a whole network, with activations kept NHWC throughout
(one transpose at the input; the heads read NHWC directly because the flatten order is folded into
the policy gather indices and the value dense weights at build time).

Graph shape handled (``leela2onnx`` output for classical-input SE-residual nets with a convolution
policy head and a WDL head, e.g. ``../shared/lc0/maia/maia-1100.onnx``)::

    /input/planes [N,112,8,8] → inputconv 3×3 + Relu
    → blockK: conv1 3×3 + Relu, conv2 3×3, SE (mean → dense → Relu → dense → split γ, β;
      sigmoid(γ)·x + β), + skip, Relu
    → policy: conv1 3×3 + Relu, conv2 3×3 (80 planes), flatten NCHW, Gather mapping_table → [N,1858]
    → value:  conv 1×1 + Relu, flatten NCHW, dense + Relu, dense, Softmax → [N,3]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from backend_xla.ops.conv_methods import conv2d

BOARD = 8  # lc0 boards are 8×8
SQUARES = BOARD * BOARD


@dataclass
class MaiaWeights:
    """Initializers of an lc0 SE-residual ONNX file, as float32 numpy arrays (ONNX layouts)."""

    input_conv: tuple[np.ndarray, np.ndarray]
    blocks: list[dict[str, Any]]  # per block: (weight, bias) pairs of the convs, SE arrays
    policy1: tuple[np.ndarray, np.ndarray]
    policy2: tuple[np.ndarray, np.ndarray]
    mapping: np.ndarray
    value_conv: tuple[np.ndarray, np.ndarray]
    value_dense1: tuple[np.ndarray, np.ndarray]
    value_dense2: tuple[np.ndarray, np.ndarray]


def load_maia(path: str) -> MaiaWeights:
    """Read the initializers of a leela2onnx SE-residual network (names as leela2onnx writes them)."""
    import onnx
    from onnx import numpy_helper

    model = onnx.load(path)
    t = {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}
    n_blocks = 1 + max(int(m.group(1)) for k in t if (m := re.match(r"/block(\d+)/", k)))

    def conv(prefix: str) -> tuple[np.ndarray, np.ndarray]:
        return (
            t[f"{prefix}/w/kernel"].astype(np.float32),
            t[f"{prefix}/w/bias"].astype(np.float32),
        )

    blocks: list[dict[str, Any]] = []
    for k in range(n_blocks):
        p = f"/block{k}/conv2/se"
        blocks.append(
            {
                "conv1": conv(f"/block{k}/conv1"),
                "conv2": conv(f"/block{k}/conv2"),
                "se_w1": t[f"{p}/matmul1/w"],
                "se_b1": t[f"{p}/add1/w"],
                "se_w2": t[f"{p}/matmul2/w"],
                "se_b2": t[f"{p}/add2/w"],
            }
        )
    return MaiaWeights(
        input_conv=conv("/inputconv"),
        blocks=blocks,
        policy1=conv("/policy/conv1"),
        policy2=conv("/policy/conv2"),
        mapping=t["/const/mapping_table"].astype(np.int64),
        value_conv=conv("/value/conv"),
        value_dense1=(t["/value/dense1/matmul/w"], t["/value/dense1/add/w"]),
        value_dense2=(t["/value/dense2/matmul/w"], t["/value/dense2/add/w"]),
    )


def nchw_flat_to_nhwc_flat(index: np.ndarray, channels: int) -> np.ndarray:
    """Map flat indices into an NCHW ``[C, 8, 8]`` flatten to the same element in ``[8, 8, C]``.

    NCHW flat index ``c·64 + s`` (s = square) is NHWC flat index ``s·C + c``.
    """
    c, s = np.divmod(np.asarray(index), SQUARES)
    return s * channels + c


def make_forward(
    wt: MaiaWeights,
    *,
    method: str = "auto",
    dtype: Any = jnp.float32,
    layout: str = "NHWC",
    micro_batch: int | None = None,
):
    """Return ``f(planes[N,112,8,8]) -> (policy[N,1858], wdl[N,3])`` (float32 outputs), unjitted.

    method: conv formulation for every conv (see :func:`backend_xla.ops.conv_methods.conv2d`).
    dtype: compute dtype of the body (float32 or bfloat16; heads' softmax is done in float32).
    layout: "NHWC" keeps activations NHWC throughout; "NCHW" is the op-by-op ONNX layout.
    micro_batch: when set and smaller than N, the network runs in a ``lax.map`` over chunks of this
       many positions (N is zero-padded up to a multiple), keeping intermediates cache-sized.
    """
    nhwc = layout == "NHWC"
    caxis = 3 if nhwc else 1
    cast = (
        (lambda a: np.asarray(a, np.float32))
        if dtype == jnp.float32
        else (lambda a: jnp.asarray(a, dtype))
    )
    # Fold the NCHW flatten of the heads into their weights / indices when running NHWC.
    p_out = wt.policy2[0].shape[0]
    v_out = wt.value_conv[0].shape[0]
    mapping = nchw_flat_to_nhwc_flat(wt.mapping, p_out) if nhwc else wt.mapping
    vw1, vb1 = wt.value_dense1
    if nhwc:  # rows of dense1 are indexed c·64 + s; reorder to s·C + c
        vw1 = vw1.reshape(v_out, SQUARES, -1).transpose(1, 0, 2).reshape(v_out * SQUARES, -1)
    vw2, vb2 = wt.value_dense2

    def conv(x, wb, relu, pad=1):
        return conv2d(
            x,
            cast(wb[0]),
            cast(wb[1]),
            pads=[pad] * 4,
            layout=layout,
            method=method,
            activation="relu" if relu else None,
        )

    def chunk(planes):
        x = planes.astype(dtype)
        if nhwc:
            x = jnp.transpose(x, (0, 2, 3, 1))
        h = conv(x, wt.input_conv, True)
        for blk in wt.blocks:
            y = conv(h, blk["conv1"], True)
            y = conv(y, blk["conv2"], False)
            s = jnp.mean(y, axis=(1, 2) if nhwc else (2, 3))
            s = jax.nn.relu(s @ cast(blk["se_w1"]) + cast(blk["se_b1"]))
            s = s @ cast(blk["se_w2"]) + cast(blk["se_b2"])
            c = y.shape[caxis]
            gamma, beta = s[:, :c], s[:, c:]
            shape = (-1, 1, 1, c) if nhwc else (-1, c, 1, 1)
            h = jax.nn.relu(jax.nn.sigmoid(gamma).reshape(shape) * y + beta.reshape(shape) + h)
        p = conv(h, wt.policy1, True)
        p = conv(p, wt.policy2, False)
        policy = jnp.take(p.reshape(p.shape[0], -1), mapping, axis=1)
        v = conv(h, wt.value_conv, True, pad=0).reshape(h.shape[0], -1)
        v = jax.nn.relu(v @ cast(vw1) + cast(vb1))
        wdl = jax.nn.softmax((v @ cast(vw2) + cast(vb2)).astype(jnp.float32), axis=-1)
        return policy.astype(jnp.float32), wdl

    if not micro_batch:
        return chunk

    def forward(planes):
        n = planes.shape[0]
        if n <= micro_batch:
            return chunk(planes)
        k = -(-n // micro_batch)
        padded = jnp.pad(planes, ((0, k * micro_batch - n), (0, 0), (0, 0), (0, 0)))
        pol, wdl = jax.lax.map(chunk, padded.reshape(k, micro_batch, *planes.shape[1:]))
        return pol.reshape(-1, pol.shape[-1])[:n], wdl.reshape(-1, 3)[:n]

    return forward
