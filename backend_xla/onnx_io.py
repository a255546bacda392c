"""Reading ONNX files and their initializers strictly: every failure becomes a :class:`NetworkError`
naming the file."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import helper, numpy_helper

from .errors import NetworkError

INPUT_NAME = "/input/planes"
"""The input of an lc0 network (lc0's ONNX convention): float planes [batch, 112, 8, 8]."""

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float16), BFLOAT16, np.dtype(np.float64))


def is_float(dtype) -> bool:
    """True for every floating dtype, bfloat16 included (numpy reports its kind as 'V')."""
    return np.dtype(dtype) in FLOAT_DTYPES


def onnx_to_np_dtype(elem_type: int, where: str = "") -> np.dtype:
    try:
        return np.dtype(helper.tensor_dtype_to_np_dtype(elem_type))
    except Exception as exc:  # onnx raises KeyError/ValueError depending on version
        raise NetworkError(f"{where}: unsupported ONNX element type {elem_type}") from exc


def device_dtype(dtype) -> np.dtype:
    """The dtype JAX holds ``dtype`` in: it runs without x64, so 64-bit types become 32-bit."""
    dtype = np.dtype(dtype)
    if dtype.itemsize == 8 and dtype.kind in "iuf":
        return np.dtype(f"{dtype.kind}4")
    return dtype


def parse_dtype(name: str) -> np.dtype:
    """'f32' | 'f16' | 'bf16' -> numpy dtype."""
    return {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "bf16": BFLOAT16}[name]


def check_external_data(model: onnx.ModelProto, base_dir: Path, source: str) -> None:
    """Refuse external-data references that point outside the model's directory."""
    root = base_dir.resolve()
    tensors = list(model.graph.initializer)
    for node in model.graph.node:
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.TENSOR:
                tensors.append(attr.t)
    for tensor in tensors:
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
        location = {e.key: e.value for e in tensor.external_data}.get("location", "")
        target = (root / location).resolve()
        if os.path.isabs(location) or not target.is_relative_to(root):
            raise NetworkError(
                f"{source}: initializer {tensor.name!r} refers to external data {location!r} "
                f"outside the model's directory {root}; refusing to read it"
            )
        if not target.is_file():
            raise NetworkError(
                f"{source}: initializer {tensor.name!r}: external data file {target} not found"
            )
        _check_external_size(tensor, target, source)


def _check_external_size(tensor: onnx.TensorProto, target: Path, source: str) -> None:
    """Refuse external data whose byte count is not the one the tensor's shape and type need,
    before anything is read: onnx reads a reference without a length to the end of the file, so
    a wrong one could read gigabytes into memory only to fail at the reshape."""
    fields = {e.key: e.value for e in tensor.external_data}
    try:
        offset = int(fields.get("offset", "0"))
        length = int(fields["length"]) if "length" in fields else None
        itemsize = helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except (ValueError, TypeError, KeyError) as exc:
        raise NetworkError(
            f"{source}: initializer {tensor.name!r}: bad external data fields {fields} ({exc})"
        ) from None
    packed = {getattr(onnx.TensorProto, t, -1) for t in ("INT4", "UINT4", "FLOAT4E2M1")}
    if tensor.data_type == onnx.TensorProto.STRING or tensor.data_type in packed:
        return  # variable-length, or two elements a byte: no simple size to check
    expected = math.prod(tensor.dims) * itemsize
    available = target.stat().st_size - offset
    given = available if length is None else length
    if offset < 0 or given != expected or given > available:
        raise NetworkError(
            f"{source}: initializer {tensor.name!r}: expected {expected} bytes of external data "
            f"(shape {list(tensor.dims)}, {itemsize}-byte elements) in {target.name}, got "
            f"{given} (offset {offset}, file {target.stat().st_size} bytes)"
        )


def tensor_to_numpy(
    tensor: onnx.TensorProto, base_dir: Path | None = None, source: str = ""
) -> np.ndarray:
    """An initializer or Constant tensor as numpy (raw_data, typed fields or external data)."""
    try:
        return np.asarray(numpy_helper.to_array(tensor, base_dir=str(base_dir) if base_dir else ""))
    except Exception as exc:
        raise NetworkError(f"{source}: cannot read tensor {tensor.name!r}: {exc}") from exc


def load_model(path: str | os.PathLike) -> onnx.ModelProto:
    """Parse an ONNX file without loading external data; errors name the file."""
    path = Path(path)
    if not path.is_file():
        raise NetworkError(f"{path}: no such network file")
    data = path.read_bytes()
    try:
        model = onnx.load_model_from_string(data)
    except Exception as exc:
        raise NetworkError(f"{path}: not a valid ONNX file ({type(exc).__name__}: {exc})") from exc
    if not model.graph.node or not model.graph.output:
        raise NetworkError(
            f"{path}: not a valid ONNX file (expected a graph with nodes and outputs, got "
            f"{len(model.graph.node)} nodes, {len(model.graph.output)} outputs; truncated?)"
        )
    check_external_data(model, path.parent, str(path))
    return model


def load_initializers(
    graph: onnx.GraphProto, base_dir: Any, source: str, float_override: Any, inline_limit: int
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The graph's initializers as (constants, params): those up to ``inline_limit`` bytes are
    inlined in the HLO, larger ones become the function's parameters. Floats are converted to
    ``float_override`` where it is set."""
    constants: dict[str, np.ndarray] = {}
    params: dict[str, np.ndarray] = {}
    for init in graph.initializer:
        value = tensor_to_numpy(init, base_dir, source)
        if float_override is not None and is_float(value.dtype):
            value = value.astype(float_override)
        (params if value.nbytes > inline_limit else constants)[init.name] = value
    return constants, params
