"""XLA backend: lc0 ONNX networks converted to JAX/HLO, compiled and evaluated with XLA.

Importing this package is cheap (JAX is imported only when a network is loaded) and registers
the backend with the engine under the name "xla".

It also asks XLA for one CPU device per usable core
(:func:`backend_xla.devices.configure_host_devices`), so that a batch can be split over
the cores (XLA's CPU convolution runs on one thread; docs/performance.md). That only works
before the first ``import jax`` in the process and only when the user has not set ``XLA_FLAGS``:
if jax is already imported it does nothing (the network then runs on the devices jax has; import
``backend_xla`` first, as the engine's entry point does, to get the split).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from engine.backend import register_backend

from .devices import configure_host_devices
from .errors import NetworkError, OptionError, UnsupportedOpError

configure_host_devices()  # before jax starts: afterwards the CPU device count is fixed

if TYPE_CHECKING:
    import onnx

    from .network import XlaNetwork

__all__ = ["NetworkError", "OptionError", "UnsupportedOpError", "load_network"]


def load_network(path: str | os.PathLike | onnx.ModelProto, options: str = "") -> XlaNetwork:
    """Load, convert and compile an lc0 network (ONNX file, lc0 .pb.gz or an onnx.ModelProto).

    ``options`` uses lc0's --backend-opts syntax ("key=value,key=value"); see
    :mod:`backend_xla.options` for the keys. The stages of a load: :mod:`backend_xla.loading`
    (read the file, lc0's graph, the JAX function, placed on the devices, compiled by batch size).
    """
    from .loading import load

    return load(path, options)


def _import_jax() -> None:
    """What every load needs first: jax (a third of a second to import; see engine/uci.py's
    start-up for why the entry point imports it before the search's warm-up starts)."""
    import jax  # noqa: F401


register_backend("xla", load_network, prepare=_import_jax)
