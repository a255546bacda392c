"""Writing lc0 weight files: encode layers and serialize a ``Net`` back to ``.pb.gz`` (protobuf's
``SerializeToString``).

Used to make modified networks (re-randomized weights, damaged files) for tests and tools.
"""

from __future__ import annotations

import gzip
import os

import numpy as np

from .netproto import Message, message
from .weights import ENC_BFLOAT16, ENC_FLOAT16, ENC_FLOAT32, ENC_LINEAR16


def encode_layer(values: np.ndarray, encoding: int = ENC_LINEAR16) -> Message:
    """A ``Weights.Layer`` holding ``values`` (flattened) in ``encoding``."""
    flat = np.asarray(values, np.float32).reshape(-1)
    fields: dict = {"encoding": encoding}
    if encoding == ENC_LINEAR16:
        lo, hi = (float(flat.min()), float(flat.max())) if flat.size else (0.0, 0.0)
        span = hi - lo
        q = np.zeros(flat.shape, np.float64) if span == 0 else (flat - lo) / span * 0xFFFF
        fields.update(min_val=lo, max_val=hi, params=np.round(q).astype("<u2").tobytes())
    elif encoding == ENC_FLOAT16:
        fields["params"] = flat.astype("<f2").tobytes()
    elif encoding == ENC_BFLOAT16:
        bits = flat.view(np.uint32)
        rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16  # round to nearest even
        fields["params"] = rounded.astype("<u2").tobytes()
    elif encoding == ENC_FLOAT32:
        fields["params"] = flat.astype("<f4").tobytes()
    else:
        raise ValueError(f"unknown layer encoding {encoding}")
    return message("Layer", fields)


def serialize(net: Message) -> bytes:
    """The protobuf bytes of a ``Net`` message."""
    return net.SerializeToString()


def write_weights(net: Message, path: str | os.PathLike) -> None:
    """Write ``net`` gzip-compressed, as lc0 stores networks."""
    with gzip.open(path, "wb", compresslevel=1) as f:
        f.write(serialize(net))
