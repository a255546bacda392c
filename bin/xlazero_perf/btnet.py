"""Random-weight lc0 transformer (attention-body) networks of any size, as lc0 ``.pb.gz`` files.

For benchmarks where matrix multiplies dominate (``bin/dev/make-bt-net``): the shared zoo's ``bt-*``
nets have embedding 64, far from lc0's BT4 (embedding 1024, 15 encoder layers, 32 heads, dff 1536).
The file uses the layout of lc0's ``NETWORK_ATTENTIONBODY_WITH_HEADFORMAT`` with the legacy
single-head fields, as the zoo's ``bt-e64h4-pemap-mish-smolgen-swish-ffnrelu2-wdl-mlh`` does:
PE_MAP input embedding, Mish default activation, smolgen (Swish), ReLU² feed-forward, attention
policy, WDL value, moves-left head. Layer sizes follow what lc0's loaders infer them from
(``src/neural/onnx/converter.cc``; :mod:`backend_xla.lc0.to_onnx`/:mod:`backend_xla.lc0.heads`
here): dense layers are stored [out][in], flattened.

Weights are normal with std ``1/sqrt(fan_in)`` (biases std 0.02, layer-norm gammas near 1), so
activations stay of order one through any depth and the outputs are finite. Nothing at run time
imports this module.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

import numpy as np

from backend_xla.lc0.netproto import Message, message
from backend_xla.lc0.weights import ENC_LINEAR16
from backend_xla.lc0.writer import encode_layer, write_weights

SQUARES = 64
INPUT_PLANES = 112
WEIGHT_MAGIC = 0x1C0
# net.proto enum values
_INPUT_CLASSICAL, _OUTPUT_WDL, _NETWORK_ATTENTIONBODY = 1, 2, 6
_POLICY_ATTENTION, _VALUE_WDL, _MOVES_LEFT_V1 = 3, 2, 1
_DEFAULT_ACTIVATION_MISH, _ACT_SWISH, _ACT_RELU2, _PE_MAP = 1, 7, 8, 1


@dataclass(frozen=True)
class BtConfig:
    """Sizes of a transformer-body network (names as lczero-training's model config)."""

    embedding: int = 256
    layers: int = 4
    heads: int = 8
    dff: int = 512
    smolgen: bool = True
    smolgen_hidden_channels: int = 32
    smolgen_hidden: int = 256
    smolgen_gen: int = 256
    policy_embedding: int | None = None  # default: embedding
    policy_d_model: int | None = None  # default: embedding
    value_embedding: int = 32
    value_hidden: int = 128
    mlh_embedding: int = 8
    mlh_hidden: int = 128

    def __post_init__(self):
        sizes = "embedding layers heads dff value_embedding value_hidden mlh_embedding mlh_hidden"
        for name in sizes.split():
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.embedding % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide the embedding ({self.embedding})")
        if (
            self.smolgen
            and min(self.smolgen_hidden_channels, self.smolgen_hidden, self.smolgen_gen) <= 0
        ):
            raise ValueError("smolgen sizes must be positive")

    @property
    def pol_emb(self) -> int:
        return self.policy_embedding or self.embedding

    @property
    def pol_d_model(self) -> int:
        return self.policy_d_model or self.embedding


PRESETS: dict[str, BtConfig] = {
    # lc0's BT4-1024x15x32h (lczero-training config); its smolgen (32 channels, 256 hidden, 256
    # gen), value and moves-left sizes are BtConfig's defaults.
    "bt4": BtConfig(embedding=1024, layers=15, heads=32, dff=1536),
    # The zoo's bt-e64h4-pemap-mish-smolgen-swish-ffnrelu2-wdl-mlh sizes.
    "zoo-e64": BtConfig(
        embedding=64,
        layers=2,
        heads=4,
        dff=128,
        smolgen_hidden_channels=8,
        smolgen_hidden=64,
        smolgen_gen=32,
        policy_embedding=32,
        policy_d_model=32,
        value_embedding=16,
        value_hidden=128,
        mlh_embedding=8,
        mlh_hidden=32,
    ),
}


def preset(name: str, **overrides) -> BtConfig:
    """A preset with some fields replaced (``None`` values are ignored)."""
    return replace(PRESETS[name], **{k: v for k, v in overrides.items() if v is not None})


class _Gen:
    def __init__(self, seed: int, encoding: int):
        self.rng = np.random.default_rng(seed)
        self.encoding = encoding
        self.count = 0

    def layer(self, values: np.ndarray) -> Message:
        self.count += values.size
        return encode_layer(values.astype(np.float32), self.encoding)

    def dense(self, fan_in: int, fan_out: int) -> Message:
        """Weights of a dense layer, stored [out][in] as lc0 does."""
        return self.layer(self.rng.normal(0.0, 1.0 / np.sqrt(fan_in), size=fan_out * fan_in))

    def bias(self, n: int) -> Message:
        return self.layer(self.rng.normal(0.0, 0.02, size=n))

    def gammas(self, n: int) -> Message:
        return self.layer(1.0 + self.rng.normal(0.0, 0.05, size=n))


def _encoder_layer(g: _Gen, c: BtConfig) -> Message:
    e = c.embedding
    mha: dict = {}
    for key in ("q", "k", "v"):
        mha[f"{key}_w"], mha[f"{key}_b"] = g.dense(e, e), g.bias(e)
    mha["dense_w"], mha["dense_b"] = g.dense(e, e), g.bias(e)
    if c.smolgen:
        hc, hid, gen = c.smolgen_hidden_channels, c.smolgen_hidden, c.smolgen_gen
        mha["smolgen"] = message(
            "Smolgen",
            {
                "compress": g.dense(e, hc),
                "dense1_w": g.dense(SQUARES * hc, hid),
                "dense1_b": g.bias(hid),
                "ln1_gammas": g.gammas(hid),
                "ln1_betas": g.bias(hid),
                "dense2_w": g.dense(hid, gen * c.heads),
                "dense2_b": g.bias(gen * c.heads),
                "ln2_gammas": g.gammas(gen * c.heads),
                "ln2_betas": g.bias(gen * c.heads),
            },
        )
    ffn = message(
        "FFN",
        {
            "dense1_w": g.dense(e, c.dff),
            "dense1_b": g.bias(c.dff),
            "dense2_w": g.dense(c.dff, e),
            "dense2_b": g.bias(e),
        },
    )
    return message(
        "EncoderLayer",
        {
            "mha": message("MHA", mha),
            "ln1_gammas": g.gammas(e),
            "ln1_betas": g.bias(e),
            "ffn": ffn,
            "ln2_gammas": g.gammas(e),
            "ln2_betas": g.bias(e),
        },
    )


def build_net(config: BtConfig, seed: int = 0, encoding: int = ENC_LINEAR16) -> tuple[Message, int]:
    """The ``Net`` message of a random network of ``config`` and its parameter count."""
    c, g = config, _Gen(seed, encoding)
    e, pe, pd = c.embedding, c.pol_emb, c.pol_d_model
    w: dict = {
        "ip_emb_w": g.dense(INPUT_PLANES + SQUARES, e),
        "ip_emb_b": g.bias(e),
        "encoder": [_encoder_layer(g, c) for _ in range(c.layers)],
        "headcount": c.heads,
        # attention policy
        "ip_pol_w": g.dense(e, pe),
        "ip_pol_b": g.bias(pe),
        "ip2_pol_w": g.dense(pe, pd),
        "ip2_pol_b": g.bias(pd),
        "ip3_pol_w": g.dense(pe, pd),
        "ip3_pol_b": g.bias(pd),
        "ip4_pol_w": g.dense(pd, 4),
        # WDL value
        "ip_val_w": g.dense(e, c.value_embedding),
        "ip_val_b": g.bias(c.value_embedding),
        "ip1_val_w": g.dense(SQUARES * c.value_embedding, c.value_hidden),
        "ip1_val_b": g.bias(c.value_hidden),
        "ip2_val_w": g.dense(c.value_hidden, 3),
        "ip2_val_b": g.bias(3),
        # moves left
        "ip_mov_w": g.dense(e, c.mlh_embedding),
        "ip_mov_b": g.bias(c.mlh_embedding),
        "ip1_mov_w": g.dense(SQUARES * c.mlh_embedding, c.mlh_hidden),
        "ip1_mov_b": g.bias(c.mlh_hidden),
        "ip2_mov_w": g.dense(c.mlh_hidden, 1),
        "ip2_mov_b": g.bias(1),
    }
    if c.smolgen:
        w["smolgen_w"] = g.dense(c.smolgen_gen, SQUARES * SQUARES)  # [4096][gen]
    fmt = message(
        "NetworkFormat",
        {
            "input": _INPUT_CLASSICAL,
            "output": _OUTPUT_WDL,
            "network": _NETWORK_ATTENTIONBODY,
            "policy": _POLICY_ATTENTION,
            "value": _VALUE_WDL,
            "moves_left": _MOVES_LEFT_V1,
            "default_activation": _DEFAULT_ACTIVATION_MISH,
            "smolgen_activation": _ACT_SWISH,
            "ffn_activation": _ACT_RELU2,
            "input_embedding": _PE_MAP,
        },
    )
    net = message(
        "Net",
        {
            "magic": WEIGHT_MAGIC,
            "license": "Random weights generated for testing; no license restrictions.",
            "min_version": message("EngineVersion", {"major": 0, "minor": 30, "patch": 0}),
            "format": message("Format", {"weights_encoding": 1, "network_format": fmt}),
            "weights": message("Weights", w),
        },
    )
    return net, g.count


def write_bt_net(
    path: str | os.PathLike, config: BtConfig, seed: int = 0, encoding: int = ENC_LINEAR16
) -> int:
    """Write a random network of ``config`` to ``path`` (gzip); returns its parameter count."""
    net, count = build_net(config, seed, encoding)
    write_weights(net, path)
    return count
