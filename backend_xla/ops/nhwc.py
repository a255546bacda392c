"""Values stored channels-last while their ONNX shape is NCHW (the converter's ``layout=NHWC``).

Why: XLA's CPU convolution is faster with NHWC dimension numbers than with ONNX's NCHW (1.05–1.4×
per conv, docs/performance.md §1), and an NCHW conv is lowered with a transpose in and out around
the kernel anyway. Keeping activations NHWC from one conv to the next (through the bias, ReLU,
residual Add, SE block, batch norm) pays one transpose at the network input and one where a head
flattens the tensor, instead of two per conv.

How: with ``layout=NHWC`` the ``Conv`` handler returns an :class:`Nhwc` — the data stored
``[N, H, W, C]`` while its ONNX (logical) shape is ``[N, C, H, W]``. A handler registered with
``nhwc=True`` (see :func:`backend_xla.ops.registry.register`) receives such values as they are and
keeps the layout where it can (helpers below); every other handler receives them through
:func:`as_nchw` (a transpose, made once per value), so it only ever sees ONNX layout.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

TO_NHWC = (0, 2, 3, 1)
TO_NCHW = (0, 3, 1, 2)
NCHW_AXIS_IN_NHWC = (0, 3, 1, 2)  # logical (NCHW) axis i is stored at position NCHW_AXIS_IN_NHWC[i]


class Nhwc:
    """A traced 4-D value stored NHWC whose ONNX shape is NCHW (see the module docstring)."""

    __slots__ = ("data", "_nchw")

    def __init__(self, data: Any) -> None:
        self.data = data
        self._nchw = None

    @property
    def shape(self) -> tuple[int, ...]:
        n, h, w, c = self.data.shape
        return (n, c, h, w)

    @property
    def dtype(self):
        return self.data.dtype

    def as_nchw(self) -> Any:
        """The value in ONNX layout (one transpose, made once however many consumers need it)."""
        if self._nchw is None:
            import jax.numpy as jnp

            self._nchw = permute(jnp, self.data, TO_NCHW)
        return self._nchw


def permute(xp: Any, x: Any, perm: tuple[int, ...]) -> Any:
    """``xp.transpose(x, perm)``, as a reshape when it only moves size-1 axes (an SE block's
    ``[N, 1, 1, C]`` ↔ ``[N, C, 1, 1]``): no data moves, and the HLO says so."""
    shape = tuple(x.shape)
    moved = tuple(shape[p] for p in perm)
    if [d for d in shape if d != 1] == [d for d in moved if d != 1] and [
        p for p in perm if shape[p] != 1
    ] == sorted(p for p in perm if shape[p] != 1):
        return xp.reshape(x, moved)
    return xp.transpose(x, perm)


def as_nchw(value: Any) -> Any:
    return value.as_nchw() if isinstance(value, Nhwc) else value


def map_data(x: Any, fn: Callable[[Any], Any]) -> Any:
    """``fn`` applied element-wise to ``x`` in whatever layout it is stored; the result keeps it."""
    return Nhwc(fn(x.data)) if isinstance(x, Nhwc) else fn(x)


def _nhwc_operand(value: Any) -> Any:
    """An operand of rank <= 4 broadcasting against an NCHW tensor, as the NHWC equivalent.

    Numpy broadcasting aligns shapes on the right, so padding the shape to rank 4 with leading 1s
    does not change the result, and transposing every rank-4 operand with the same permutation
    transposes the result. Constants (per-channel ``[C,1,1]`` biases, scalars) fold at conversion.
    """
    if isinstance(value, Nhwc):
        return value.data
    shape = tuple(value.shape)
    padded = (1,) * (4 - len(shape)) + shape
    if isinstance(value, np.ndarray):
        return np.transpose(np.reshape(value, padded), TO_NHWC)
    import jax.numpy as jnp

    return permute(jnp, jnp.reshape(value, padded), TO_NHWC)


def broadcasting(args: tuple, fn: Callable[..., Any]) -> Any:
    """``fn(*args)`` for an element-wise op with numpy broadcasting, in the layout of its inputs.

    When an operand is NHWC and every operand has rank <= 4, every operand is transposed alike
    (:func:`_nhwc_operand`) and the result stays NHWC; otherwise ``fn`` runs in ONNX layout.
    """
    if any(isinstance(a, Nhwc) for a in args) and all(
        a is not None and len(a.shape) <= 4 for a in args
    ):
        return Nhwc(fn(*[_nhwc_operand(a) for a in args]))
    return fn(*[as_nchw(a) for a in args])
