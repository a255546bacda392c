"""Convolution benchmark arithmetic. The formulations themselves are run-time code and live in
:mod:`backend_xla.ops.conv_methods` (the ``Conv`` handler uses them for ``conv_method``)."""

from __future__ import annotations


def conv_flops(
    n: int, cin: int, cout: int, oh: int, ow: int, kh: int = 3, kw: int = 3, group: int = 1
) -> int:
    """Direct-convolution FLOPs (2 per multiply-add) — the rate every method is reported against."""
    return 2 * n * oh * ow * cout * (cin // group) * kh * kw
