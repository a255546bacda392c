"""lc0 weights -> ONNX: :class:`Converter`, the network body (residual tower, attention body).

Follows lc0's ``src/neural/onnx/converter.cc`` op for op and name for name, so the graph computes
what lc0's own ``leela2onnx`` conversion computes. The parts live in :mod:`.converter_base`
(weights, activations), :mod:`.residual`, :mod:`.encoder` and :mod:`.attention_body`; heads are
in :mod:`.heads`.
"""

from __future__ import annotations

from .attention_body import AttentionBody, position_encoding
from .converter_base import INPUT_PLANES, SQUARES
from .residual import ResidualTower

__all__ = ["INPUT_PLANES", "SQUARES", "Converter", "position_encoding"]


class Converter(ResidualTower, AttentionBody):
    """Builds the ONNX graph for one network; see :func:`backend_xla.lc0.build_onnx`."""
