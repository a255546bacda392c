"""ONNX op handlers, one small function per op, grouped by family; importing this package fills
the registry (see :mod:`backend_xla.ops.registry`). Each handler takes its inputs in the layout
the converter keeps them in (ONNX's NCHW, or NHWC: :mod:`backend_xla.ops.nhwc`)."""

from . import conv, elementwise, linear, normalization, reduce, shape  # noqa: F401  (registration)
from .nhwc import Nhwc, as_nchw
from .registry import NodeContext, handler_for, is_static, register, supported_ops

__all__ = [
    "NodeContext",
    "Nhwc",
    "as_nchw",
    "handler_for",
    "is_static",
    "register",
    "supported_ops",
]
