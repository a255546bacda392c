"""ONNX op handlers, one small function per op, grouped by family; importing this package fills
the registry (see :mod:`backend_xla.ops.registry`)."""

from . import elementwise, linear, normalization, reduce, shape  # noqa: F401  (registration)
from .registry import NodeContext, handler_for, is_static, register, supported_ops

__all__ = ["NodeContext", "handler_for", "is_static", "register", "supported_ops"]
