"""The one exception type of the lc0 weight-file reader and ONNX builder."""

from __future__ import annotations


class WeightsError(ValueError):
    """A weight file that cannot be read or converted; the message names the file and the cause."""
