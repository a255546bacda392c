"""XLA backend: lc0 ONNX networks converted to JAX/HLO, compiled and evaluated with XLA.

Importing this package is cheap (JAX is imported only when a network is loaded) and registers
the backend with the engine under the name "xla".
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from engine.backend import register_backend

from .errors import NetworkError, OptionError, UnsupportedOpError

if TYPE_CHECKING:
    import onnx

    from .network import XlaNetwork

__all__ = ["NetworkError", "OptionError", "UnsupportedOpError", "load_network"]


def load_network(path: "str | os.PathLike | onnx.ModelProto", options: str = "") -> "XlaNetwork":
    """Load, convert and compile an lc0 network (ONNX file, lc0 .pb.gz or an onnx.ModelProto).

    ``options`` uses lc0's --backend-opts syntax ("key=value,key=value"); see
    :mod:`backend_xla.options` for the keys.
    """
    from .network import XlaNetwork

    return XlaNetwork(path, options)


register_backend("xla", load_network)
