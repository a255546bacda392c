"""The explicit registry of ONNX op handlers and the context each handler receives.

A handler is ``fn(ctx: NodeContext, *inputs) -> value | tuple[value, ...]``. Inputs are either
``numpy.ndarray`` (values known at conversion time: small initializers, ``Constant`` nodes and
everything computed only from them, including ``Shape`` of a tensor whose shape is static) or JAX
arrays (traced values). Handlers compute with ``ctx.xp``, which is ``numpy`` when every input is
static (so shape subgraphs fold to constants while the graph is converted) and ``jax.numpy``
otherwise. A missing optional input is ``None``.

With ``layout=NHWC`` a traced 4-D input may also be an :class:`~backend_xla.ops.nhwc.Nhwc` (stored
channels-last, ONNX shape NCHW). Only handlers registered with ``nhwc=True`` see those, and each
handles both layouts itself; every other handler gets its inputs in ONNX layout.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx import helper

from ..errors import NetworkError
from .nhwc import as_nchw

Handler = Callable[..., Any]

_HANDLERS: dict[str, Handler] = {}


def register(*op_types: str, nhwc: bool = False) -> Callable[[Handler], Handler]:
    """Register ``fn`` as the handler of each ONNX op type in ``op_types`` (default domain).

    ``nhwc``: ``fn`` takes inputs in either layout (see the module docstring); otherwise the
    registered handler hands ``fn`` every input in ONNX layout.
    """

    def wrap(fn: Handler) -> Handler:
        handler = fn if nhwc else _in_onnx_layout(fn)
        for op in op_types:
            if op in _HANDLERS:
                raise RuntimeError(f"op {op} registered twice")
            _HANDLERS[op] = handler
        return fn

    return wrap


def _in_onnx_layout(fn: Handler) -> Handler:
    @functools.wraps(fn)
    def handler(ctx, *inputs):
        return fn(ctx, *[as_nchw(x) for x in inputs])

    return handler


def handler_for(op_type: str) -> Handler | None:
    return _HANDLERS.get(op_type)


def supported_ops() -> list[str]:
    """Sorted names of every ONNX op the converter handles."""
    return sorted(_HANDLERS)


def is_static(value: Any) -> bool:
    return isinstance(value, np.ndarray)


@dataclass
class NodeContext:
    """What a handler may know about the node it converts.

    ``float_override``: when the user asked for a compute type (``data_type``), the numpy dtype
    every floating tensor is computed in; ``Cast`` to any float type goes there instead.
    ``layout``: the converter's activation layout (``"NHWC"``: ``Conv`` outputs are stored
    channels-last); ``conv_method``: the convolution formulation asked for (option
    ``conv_method``); ``hwio_filter``: this ``Conv``'s filter input was stored ``[KH, KW, Cin,
    Cout]`` at load instead of ONNX's OIHW (``Converter.params_for``); ``winograd_filter``: this
    3×3 ``Conv`` runs as Winograd F(2×2) on this filter transform, made at load.
    """

    node: onnx.NodeProto
    opset: int
    xp: Any
    source: str
    float_override: Any = None
    layout: str = "NCHW"
    conv_method: str = "lax"
    hwio_filter: bool = False
    winograd_filter: Any = None
    attrs: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.attrs = {a.name: helper.get_attribute_value(a) for a in self.node.attribute}

    def attr(self, name: str, default: Any = None) -> Any:
        value = self.attrs.get(name, default)
        if isinstance(value, bytes):
            return value.decode()
        if isinstance(value, onnx.TensorProto):
            from ..onnx_io import tensor_to_numpy

            return tensor_to_numpy(value)
        return value

    def error(self, message: str) -> NetworkError:
        return NetworkError(
            f"{self.source}: node {self.node.name!r} (op {self.node.op_type}): {message}"
        )

    def static(self, value: Any, what: str) -> np.ndarray:
        """``value`` as numpy, or an error saying that ``what`` must be known at conversion time."""
        if value is None:
            raise self.error(f"expected input {what}, got none")
        if not is_static(value):
            raise self.error(
                f"expected {what} to be a constant known at conversion time, got a value computed "
                "from the network input"
            )
        return value

    def ints(self, value: Any, what: str) -> list[int]:
        return [int(v) for v in np.asarray(self.static(value, what)).reshape(-1)]

    def axes(self, value: Any, rank: int, what: str = "axes") -> list[int]:
        """Normalize (possibly negative) axes against ``rank``, checking the range."""
        out = []
        for a in value:
            a = int(a)
            if not -rank <= a < rank:
                raise self.error(f"expected {what} in [{-rank}, {rank - 1}], got {a}")
            out.append(a % rank)
        return out

    def float_dtype(self, dtype: Any) -> Any:
        """The dtype a floating tensor of ``dtype`` is computed in (honours ``data_type``)."""
        from ..onnx_io import is_float

        if self.float_override is not None and is_float(dtype):
            return self.float_override
        return dtype
