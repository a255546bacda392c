"""Export trained params to lc0's weight format (``.pb.gz``) and to ONNX.

The ``.pb.gz`` is written with ``backend_xla.lc0``'s protobuf encoder in the layout lc0 reads
(``net.proto``): SE_WITH_HEADFORMAT, POLICY_CONVOLUTION, VALUE_WDL, input format 1, ReLU;
convolution blocks carry weights and biases only (no batch norm), dense layers are stored
[out][in] as lc0 expects. The ONNX file is built from the *read-back* ``.pb.gz`` with
``backend_xla.lc0.build_onnx``, so both files hold the same network.

``policy_scale`` multiplies the policy logits (the last policy convolution's weights and biases):
a search applies its softmax temperature T to the logits, so a network whose policy is best
searched at temperature t is exported with scale T_default / t, and then every engine at lc0's
default temperature (xlazero included) searches it as intended.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import onnx

from backend_xla.lc0 import build_onnx, read_weights
from backend_xla.lc0.netproto import Message, message
from backend_xla.lc0.weights import ENC_FLOAT32, conv_block, layer_values
from backend_xla.lc0.writer import encode_layer, write_weights

WEIGHT_MAGIC = 0x1C0
MIN_VERSION = (0, 21, 0)
"""lc0 version that introduced this network format (as Maia's files declare)."""
NETWORK_FORMAT = dict(input=1, output=2, network=4, policy=2, value=2, moves_left=0,
                      default_activation=0)
"""INPUT_CLASSICAL_112_PLANE, OUTPUT_WDL, NETWORK_SE_WITH_HEADFORMAT, POLICY_CONVOLUTION,
VALUE_WDL, no moves-left head, ReLU."""
LICENSE = "MIT"


def _layer(values, encoding: int) -> Message:
    return encode_layer(np.asarray(values, np.float32), encoding)


def _conv(p: dict, enc: int) -> Message:
    return message("ConvBlock", {"weights": _layer(p["w"], enc), "biases": _layer(p["b"], enc)})


def _dense_w(p: dict, enc: int) -> Message:
    """lc0 stores a dense layer's weights [out][in]; ours are [in, out]."""
    return _layer(np.asarray(p["w"]).T, enc)


def params_to_net(params: dict, encoding: int = ENC_FLOAT32, training_steps: int = 0,
                  policy_scale: float = 1.0) -> Message:
    """The ``Net`` message of ``params`` (see :mod:`nets.training.model`), its policy logits
    multiplied by ``policy_scale``."""
    if not policy_scale > 0:
        raise ValueError(f"policy_scale: expected a positive number, got {policy_scale}")
    policy = {k: np.asarray(v, np.float32) * np.float32(policy_scale) for k, v in params["policy"].items()}
    residual = []
    for blk in params["blocks"]:
        se = message("SEunit", {"w1": _dense_w(blk["se1"], encoding), "b1": _layer(blk["se1"]["b"], encoding),
                                "w2": _dense_w(blk["se2"], encoding), "b2": _layer(blk["se2"]["b"], encoding)})
        residual.append(message("Residual", {"conv1": _conv(blk["conv1"], encoding),
                                             "conv2": _conv(blk["conv2"], encoding), "se": se}))
    weights = message("Weights", {
        "input": _conv(params["input"], encoding), "residual": residual,
        "policy1": _conv(params["policy1"], encoding), "policy": _conv(policy, encoding),
        "value": _conv(params["value"], encoding),
        "ip1_val_w": _dense_w(params["value1"], encoding), "ip1_val_b": _layer(params["value1"]["b"], encoding),
        "ip2_val_w": _dense_w(params["value2"], encoding), "ip2_val_b": _layer(params["value2"]["b"], encoding),
    })
    fmt = message("Format", {"weights_encoding": 1,
                             "network_format": message("NetworkFormat", dict(NETWORK_FORMAT))})
    version = message("EngineVersion", dict(zip(("major", "minor", "patch"), MIN_VERSION)))
    fields = {"magic": WEIGHT_MAGIC, "license": LICENSE, "min_version": version, "format": fmt,
              "weights": weights}
    if training_steps:
        fields["training_params"] = message("TrainingParams", {"training_steps": training_steps})
    return message("Net", fields)


def export(params: dict, pb_path: str | os.PathLike, onnx_path: str | os.PathLike | None = None,
           encoding: int = ENC_FLOAT32, training_steps: int = 0, policy_scale: float = 1.0) -> None:
    """Write ``pb_path`` (lc0 ``.pb.gz``) and, if given, ``onnx_path`` built from the read-back file."""
    Path(pb_path).parent.mkdir(parents=True, exist_ok=True)
    write_weights(params_to_net(params, encoding, training_steps, policy_scale), pb_path)
    if onnx_path is not None:
        model = build_onnx(read_weights(pb_path))
        onnx.save(model, os.fspath(onnx_path))


def params_from_weights(path: str | os.PathLike, template: dict, policy_scale: float = 1.0) -> dict:
    """The inverse of :func:`params_to_net`: params shaped like ``template`` (``init_params`` of
    the same architecture) read from an lc0 weight file, its policy logits divided by
    ``policy_scale`` (the scale it was exported with), so a shipped network can be trained further.

    Raises ValueError naming the layer whose size does not match the template's architecture.
    """
    if not policy_scale > 0:
        raise ValueError(f"policy_scale: expected a positive number, got {policy_scale}")
    w = read_weights(path).weights
    where = os.fspath(path)

    def fit(values: np.ndarray, shape: tuple, name: str) -> np.ndarray:
        if values.size != int(np.prod(shape)):
            raise ValueError(f"{where}: {name}: expected {int(np.prod(shape))} values for shape "
                             f"{list(shape)} (the training architecture), got {values.size}")
        return values.reshape(shape)

    def conv(block, tmpl: dict, name: str) -> dict:
        c = conv_block(block, f"{where}.{name}")
        return {"w": fit(c.weights, np.shape(tmpl["w"]), name + ".weights"),
                "b": fit(c.biases, np.shape(tmpl["b"]), name + ".biases")}

    def dense(weights, biases, tmpl: dict, name: str) -> dict:
        n_in, n_out = np.shape(tmpl["w"])  # lc0 stores [out][in]
        return {"w": fit(layer_values(weights, name), (n_out, n_in), name + ".w").T.copy(),
                "b": fit(layer_values(biases, name), np.shape(tmpl["b"]), name + ".b")}

    if len(w.residual) != len(template["blocks"]):
        raise ValueError(f"{where}: expected {len(template['blocks'])} residual blocks, got {len(w.residual)}")
    blocks = []
    for i, (res, tmpl) in enumerate(zip(w.residual, template["blocks"])):
        name = f"residual[{i}]"
        if not res.HasField("se"):
            raise ValueError(f"{where}: {name} has no SE unit (the training network is SE residual)")
        blocks.append({"conv1": conv(res.conv1, tmpl["conv1"], name + ".conv1"),
                       "conv2": conv(res.conv2, tmpl["conv2"], name + ".conv2"),
                       "se1": dense(res.se.w1, res.se.b1, tmpl["se1"], name + ".se.w1"),
                       "se2": dense(res.se.w2, res.se.b2, tmpl["se2"], name + ".se.w2")})
    policy = conv(w.policy, template["policy"], "policy")
    return {"input": conv(w.input, template["input"], "input"), "blocks": blocks,
            "policy1": conv(w.policy1, template["policy1"], "policy1"),
            "policy": {k: v / np.float32(policy_scale) for k, v in policy.items()},
            "value": conv(w.value, template["value"], "value"),
            "value1": dense(w.ip1_val_w, w.ip1_val_b, template["value1"], "ip1_val"),
            "value2": dense(w.ip2_val_w, w.ip2_val_b, template["value2"], "ip2_val")}
