"""lc0's own weight files (``.pb.gz``): reading, describing, and conversion to ONNX.

Cheap to import: onnx (and the graph builder) load only when a graph is built.

    read_weights(path) -> Lc0Weights
    build_onnx(weights, data_type="f32", policy_head="vanilla", value_head="winner") -> onnx.ModelProto
    load_lc0_onnx(path, policy_head=, value_head=, data_type=, opset=) -> onnx.ModelProto
    describe(path) -> list[str]
"""

from __future__ import annotations

from .errors import WeightsError
from .weights import Lc0Weights, NetworkFormat, read_weights

__all__ = [
    "WeightsError",
    "Lc0Weights",
    "NetworkFormat",
    "read_weights",
    "build_onnx",
    "load_lc0_onnx",
    "describe",
]


def build_onnx(weights, data_type="f32", policy_head="vanilla", value_head="winner", **kwargs):
    """See :func:`backend_xla.lc0.build.build_onnx`."""
    from .build import build_onnx as _build

    return _build(weights, data_type, policy_head, value_head, **kwargs)


def load_lc0_onnx(path, **heads_and_types):
    """See :func:`backend_xla.lc0.build.load_lc0_onnx`."""
    from .build import load_lc0_onnx as _load

    return _load(path, **heads_and_types)


def describe(path) -> list[str]:
    """See :func:`backend_xla.lc0.description.describe`."""
    from .description import describe as _describe

    return _describe(path)
