"""``build_onnx``: an lc0 weight file -> an ONNX model following lc0's conventions."""

from __future__ import annotations

import os

import onnx

from ..onnx_io import INPUT_NAME
from .errors import WeightsError
from .graph import GraphBuilder
from .heads import moves_left_head
from .heads import policy_head as policy_head_fn
from .heads import value_head as value_head_fn
from .to_onnx import Converter
from .weights import Lc0Weights, read_weights

DEFAULT_OPSET = 17
INPUT_FORMAT_KEY = "lc0_input_format"
_SUPPORTED = {
    "network": {3, 4, 6, 7},
    "policy": {1, 2, 3},
    "value": {1, 2},
    "default_activation": {0, 1},
    "input_embedding": {0, 1, 2},
}


def check_format(weights: Lc0Weights) -> None:
    """lc0's ``CheckSrcFormat``: reject architectures the converter does not handle."""
    fmt = weights.format
    if weights.net.HasField("onnx_model") and weights.weights is None:
        raise WeightsError(
            f"{weights.path}: holds an ONNX model, not weights (network "
            f"{fmt.name('network')}): use load_lc0_onnx, which extracts it"
        )
    if weights.weights is None:
        raise WeightsError(f"{weights.path}: the network has no weights")
    for field, allowed in _SUPPORTED.items():
        if getattr(fmt, field) not in allowed:
            raise WeightsError(
                f"{weights.path}: unsupported {field} format {fmt.name(field)}: "
                f"expected one of {[_name(field, v) for v in sorted(allowed)]}"
            )


def _name(field: str, value: int) -> str:
    from .schema import NETWORK_FORMAT_ENUMS

    return NETWORK_FORMAT_ENUMS[field][value]


def build_onnx(
    weights: Lc0Weights,
    data_type: str = "f32",
    policy_head: str = "vanilla",
    value_head: str = "winner",
    *,
    opset: int = DEFAULT_OPSET,
    real_mish: bool = False,
) -> onnx.ModelProto:
    """The ONNX graph of ``weights``, as lc0's ``leela2onnx`` builds it.

    Input ``/input/planes`` [batch, 112, 8, 8]; outputs ``/output/policy`` [batch, 1858] raw
    logits, ``/output/wdl`` [batch, 3] (softmaxed) or ``/output/value`` [batch, 1] (tanh), and
    ``/output/mlh`` [batch, 1] for moves-left networks; all in ``data_type`` (f32, f16 or bf16).
    ``policy_head``/``value_head`` select heads of multi-head networks (lc0's ``--policy-head``,
    ``--value-head``). ``metadata_props["lc0_input_format"]`` records the input format.
    """
    try:
        return _build(weights, data_type, policy_head, value_head, opset, real_mish)
    except WeightsError as e:
        if weights.path in str(e):
            raise
        raise WeightsError(
            f"{weights.path}: {e}"
        ) from e  # layer decoding errors name the layer only


def _build(
    weights: Lc0Weights,
    data_type: str,
    policy_head: str,
    value_head: str,
    opset: int,
    real_mish: bool,
) -> onnx.ModelProto:
    check_format(weights)
    graph = GraphBuilder(data_type, opset, weights.path)
    conv = Converter(weights, graph, opset, real_mish)
    graph.add_input(INPUT_NAME, ["batch", 112, 8, 8])
    flow = INPUT_NAME
    if conv.num_res_blocks > 0:
        flow = conv.residual_tower(flow)
    if conv.num_enc_blocks > 0:
        flow = conv.attention_body(flow)
    elif conv.num_res_blocks == 0:
        raise WeightsError(
            f"{weights.path}: the network has neither residual blocks nor encoder layers"
        )
    policy_head_fn(conv, flow, policy_head)
    value_head_fn(conv, flow, value_head)
    moves_left_head(conv, flow)
    metadata = {
        INPUT_FORMAT_KEY: str(weights.format.input),
        "lc0_policy_head": policy_head,
        "lc0_value_head": value_head,
        "lc0_source": os.path.basename(weights.path),
    }
    model = graph.model("org.lczero/converted", metadata)
    model.domain = "org.lczero.models.*"
    return model


def load_lc0_onnx(
    path: str | os.PathLike,
    policy_head: str = "vanilla",
    value_head: str = "winner",
    data_type: str = "f32",
    opset: int = DEFAULT_OPSET,
) -> onnx.ModelProto:
    """Read an lc0 weight file and build its ONNX model with the named heads (as lc0's
    --policy-head / --value-head), data type (f32/f16/bf16) and opset. A file that embeds an
    ONNX model (lc0's NETWORK_ONNX) returns it, with the input format recorded.
    """
    weights = read_weights(path)
    if weights.net.HasField("onnx_model") and weights.weights is None:
        blob = weights.net.onnx_model.model
        try:
            model = onnx.load_from_string(blob)
        except Exception as e:  # onnx raises DecodeError subclasses of several kinds
            raise WeightsError(f"{weights.path}: embedded ONNX model cannot be parsed: {e}") from e
        model.metadata_props.add(key=INPUT_FORMAT_KEY, value=str(weights.format.input))
        return model
    return build_onnx(
        weights, data_type=data_type, policy_head=policy_head, value_head=value_head, opset=opset
    )
