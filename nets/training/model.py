"""The trained network in JAX: lc0's SE residual tower with convolution policy and WDL value.

Exactly the computation lc0 (and ``backend_xla.lc0.build_onnx``) performs for a weight file with
network format SE_WITH_HEADFORMAT, POLICY_CONVOLUTION, VALUE_WDL, ReLU, input format 1, and
convolution blocks without batch norm (weights + biases, which lc0 accepts as they are):

    input   conv3x3 112->F, relu
    block   conv3x3 F->F, relu; conv3x3 F->F; SE(mean -> dense F->S relu -> dense S->2F:
            sigmoid(gate) * x + bias); + skip; relu
    policy  conv3x3 F->F relu; conv3x3 F->80; flatten [80*64]; gather by lc0's conv map -> 1858
    value   conv1x1 F->32 relu; flatten [32*64] (channel-major); dense ->128 relu; dense ->3

No batch norm, so training and inference are the same function; the residual branch's last
convolution starts small (``RESIDUAL_INIT_SCALE``) so a deep tower trains stably without it.
Params are a dict of float32 arrays; shapes in :func:`init_params`. Arrays are NCHW / OIHW as lc0.
"""

from __future__ import annotations

from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np

from backend_xla.lc0.policy_map import CONV_POLICY_PLANES, conv_policy_map
from engine.backend import INPUT_PLANES, POLICY_SIZE

VALUE_CHANNELS = 32
"""Channels of the value head's 1x1 convolution, as in lc0's residual networks (and Maia)."""
VALUE_HIDDEN = 128
RESIDUAL_INIT_SCALE = 0.1
_DIMS = ("NCHW", "OIHW", "NCHW")
_POLICY_MAP = np.asarray(conv_policy_map())


@dataclass(frozen=True)
class NetConfig:
    """Architecture: ``blocks`` SE residual blocks of ``filters`` channels, SE width ``se_ratio``."""

    blocks: int = 6
    filters: int = 64
    se_ratio: int = 4

    @property
    def se_channels(self) -> int:
        return self.filters // self.se_ratio


def init_params(cfg: NetConfig, seed: int) -> dict:
    """He-initialised params. Shapes: conv ``w`` [out, in, k, k], ``b`` [out]; dense ``w`` [in, out].

    Drawn with numpy, not ``jax.random``: op by op, each of JAX's dozens of differently shaped
    draws compiles its own kernel (seconds at the start of every run and test)."""
    f, s = cfg.filters, cfg.se_channels
    rng = np.random.default_rng(seed)

    def he(shape, fan_in, scale=1.0):
        return jnp.asarray(rng.standard_normal(shape, np.float32) * np.float32(np.sqrt(2.0 / fan_in) * scale))

    def zeros(n):
        return jnp.asarray(np.zeros(n, np.float32))

    conv = lambda o, i, k, scale=1.0: {"w": he((o, i, k, k), i * k * k, scale),  # noqa: E731
                                        "b": zeros(o)}
    dense = lambda i, o: {"w": he((i, o), i), "b": zeros(o)}  # noqa: E731
    params = {"input": conv(f, INPUT_PLANES, 3), "blocks": []}
    for _ in range(cfg.blocks):
        params["blocks"].append({"conv1": conv(f, f, 3), "conv2": conv(f, f, 3, RESIDUAL_INIT_SCALE),
                                 "se1": dense(f, s), "se2": dense(s, 2 * f)})
    params["policy1"] = conv(f, f, 3)
    params["policy"] = conv(CONV_POLICY_PLANES, f, 3)
    params["value"] = conv(VALUE_CHANNELS, f, 1)
    params["value1"] = dense(VALUE_CHANNELS * 64, VALUE_HIDDEN)
    params["value2"] = dense(VALUE_HIDDEN, 3)
    return params


def _conv(x, p):
    k = p["w"].shape[-1]
    y = jax.lax.conv_general_dilated(x, p["w"], (1, 1), [(k // 2, k // 2)] * 2, dimension_numbers=_DIMS)
    return y + p["b"][None, :, None, None]


def _dense(x, p):
    return x @ p["w"] + p["b"]


def forward(params: dict, planes: jnp.ndarray) -> tuple[jnp.ndarray, jnp.ndarray]:
    """planes float32 [N, 112, 8, 8] -> (policy logits [N, 1858], WDL logits [N, 3])."""
    x = jax.nn.relu(_conv(planes, params["input"]))
    f = x.shape[1]
    for blk in params["blocks"]:
        y = jax.nn.relu(_conv(x, blk["conv1"]))
        y = _conv(y, blk["conv2"])
        se = jax.nn.relu(_dense(y.mean(axis=(2, 3)), blk["se1"]))
        se = _dense(se, blk["se2"])
        gate, bias = se[:, :f], se[:, f:]
        y = jax.nn.sigmoid(gate)[:, :, None, None] * y + bias[:, :, None, None]
        x = jax.nn.relu(y + x)
    p = jax.nn.relu(_conv(x, params["policy1"]))
    p = _conv(p, params["policy"]).reshape(p.shape[0], CONV_POLICY_PLANES * 64)
    policy = p[:, _POLICY_MAP]
    v = jax.nn.relu(_conv(x, params["value"])).reshape(x.shape[0], -1)
    v = jax.nn.relu(_dense(v, params["value1"]))
    return policy, _dense(v, params["value2"])


def param_count(params: dict) -> int:
    return int(sum(np.size(a) for a in jax.tree_util.tree_leaves(params)))


assert _POLICY_MAP.shape == (POLICY_SIZE,)
