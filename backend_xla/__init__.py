"""XLA backend: lc0 ONNX networks converted to JAX/HLO, compiled and evaluated with XLA.

A load (:func:`load_network`, :mod:`backend_xla.loading`) is one pass through named stages, each
in its own module and each entered once: the options parsed (``options``) → where the network
runs (``runtime.setup``: the devices, the cache folder) → the cache of converted networks
(``exec_cache.lookup``, which stands in for stages 1-3 on a warm start) → 1-2. the file read and
checked as lc0's graph (``network_file.read``) → 3. the JAX function (``onnx_to_jax.convert``) →
4. its parameters placed on the devices (``devices.upload``) → 5. its executables by batch size
(``buckets.compile_sizes``) → the network (``network.XlaNetwork``).

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
    :mod:`backend_xla.options` for the keys; the stages of a load: this module's docstring.
    """
    from .loading import load

    return load(path, options)


def _import_jax() -> None:
    """What every load needs first: jax (a third of a second to import; see engine/uci.py's
    start-up for why the entry point imports it before the search's warm-up starts)."""
    import jax  # noqa: F401


register_backend("xla", load_network, prepare=_import_jax)
