"""Errors raised by the XLA backend.

Every failure to read, convert or evaluate a network surfaces as a :class:`NetworkError` (a
``ValueError``) whose message names the file and, where there is one, the node and op.
"""

from __future__ import annotations

from engine.backend import OptionError  # noqa: F401  (the one class of option errors, re-exported)


class NetworkError(ValueError):
    """A network file could not be read, converted or run."""


class UnsupportedOpError(NetworkError):
    """The graph uses an ONNX op (or op variant) this converter does not implement."""
