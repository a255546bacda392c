"""A small ONNX graph builder that names nodes and initializers the way lc0's OnnxBuilder does.

Every node's output is named after the node; a constant operand of node N is the initializer
``N/w`` (``N/w/kernel`` and ``N/w/bias`` for Conv, ``N/w/scale``/``N/w/bias`` for
LayerNormalization), so graphs built here line up name for name with lc0's ``leela2onnx`` output.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import onnx
from onnx import TensorProto, helper

from .errors import WeightsError

INT32_MAX = 2**31 - 1
DATA_TYPES = {"f32": TensorProto.FLOAT, "f16": TensorProto.FLOAT16, "bf16": TensorProto.BFLOAT16}


@dataclass(frozen=True)
class Vec:
    """Decoded weights (flat float32) and where they came from (for error messages)."""

    values: np.ndarray
    where: str

    @property
    def size(self) -> int:
        return int(self.values.size)


def _np_dtype(data_type: str):
    if data_type == "bf16":
        import ml_dtypes

        return ml_dtypes.bfloat16
    return {"f32": np.float32, "f16": np.float16}[data_type]


class GraphBuilder:
    """Accumulates nodes and initializers; weights are stored in ``data_type``."""

    def __init__(self, data_type: str = "f32", opset: int = 17, file: str = "<weights>"):
        if data_type not in DATA_TYPES:
            raise WeightsError(
                f"{file}: unsupported ONNX data type {data_type!r}: expected one of "
                f"{sorted(DATA_TYPES)}"
            )
        self.data_type = data_type
        self.elem_type = DATA_TYPES[data_type]
        self.opset = opset
        self.file = file
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: dict[str, onnx.TensorProto] = {}
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []

    # ------------------------------------------------------------------ constants
    def weights(
        self,
        vec: Vec,
        dims: Sequence[int],
        order: Sequence[int] | None = None,
        dtype: str | None = None,
    ) -> np.ndarray:
        """``vec`` as a tensor of shape ``dims``; ``order`` as lc0's adapters: the source is laid out
        in ``[dims[o] for o in order]`` and is transposed into ``dims``."""
        expected = int(np.prod(dims))
        if vec.size != expected:
            raise WeightsError(
                f"{self.file}: {vec.where}: expected {expected} values for shape "
                f"{list(dims)}, got {vec.size}"
            )
        arr = vec.values
        if order:
            src = arr.reshape([dims[o] for o in order])
            arr = np.transpose(src, np.argsort(order))
        else:
            arr = arr.reshape(dims)
        return np.ascontiguousarray(arr).astype(_np_dtype(dtype or self.data_type))

    def scalar(self, value: float) -> np.ndarray:
        return np.array([value], np.float32).astype(_np_dtype(self.data_type))

    def initializer(self, name: str, array: np.ndarray) -> str:
        if name not in self.initializers:
            self.initializers[name] = _tensor(name, array)
        return name

    def int64(self, name: str, values: Sequence[int]) -> str:
        return self.initializer(name, np.asarray(values, np.int64))

    # ------------------------------------------------------------------ nodes
    def node(
        self,
        op: str,
        name: str,
        inputs: Sequence[str],
        outputs: Sequence[str] | None = None,
        **attrs,
    ) -> str:
        outs = list(outputs) if outputs is not None else [name]
        self.nodes.append(helper.make_node(op, list(inputs), outs, name=name, **attrs))
        return outs[0]

    def const_input(self, name: str, array: np.ndarray, suffix: str = "/w") -> str:
        return self.initializer(name + suffix, array)

    def unary(self, op: str, name: str, x: str, **attrs) -> str:
        return self.node(op, name, [x], **attrs)

    def binary(self, op: str, name: str, a: str, b: str | np.ndarray) -> str:
        if isinstance(b, np.ndarray):
            b = self.const_input(name, b)
        return self.node(op, name, [a, b])

    def add(self, name, a, b):
        return self.binary("Add", name, a, b)

    def mul(self, name, a, b):
        return self.binary("Mul", name, a, b)

    def matmul(self, name, a, b):
        return self.binary("MatMul", name, a, b)

    def conv(self, name: str, x: str, kernel: np.ndarray, bias: np.ndarray) -> str:
        k = kernel.shape[-1]
        pad = (k - 1) // 2
        return self.node(
            "Conv",
            name,
            [
                x,
                self.const_input(name, kernel, "/w/kernel"),
                self.const_input(name, bias, "/w/bias"),
            ],
            pads=[pad] * 4,
            kernel_shape=[k, k],
        )

    def reshape(
        self, name: str, x: str, shape_name: str, shape: Sequence[int] | None = None
    ) -> str:
        if shape is not None:
            self.int64(shape_name, shape)
        return self.node("Reshape", name, [x, shape_name])

    def transpose(self, name: str, x: str, perm: Sequence[int]) -> str:
        return self.node("Transpose", name, [x], perm=list(perm))

    def softmax(self, name: str, x: str, axis: int) -> str:
        return self.node("Softmax", name, [x], axis=axis)

    def layer_norm(self, name: str, x: str, scale: np.ndarray, bias: np.ndarray, eps: float) -> str:
        return self.node(
            "LayerNormalization",
            name,
            [x, self.const_input(name, scale, "/w/scale"), self.const_input(name, bias, "/w/bias")],
            axis=1,
            epsilon=float(eps),
        )

    def slice(self, name: str, x: str, starts: Sequence[int], ends: Sequence[int]) -> str:
        s = self.initializer(name + "/starts", np.asarray(starts, np.int32))
        e = self.initializer(name + "/ends", np.asarray(ends, np.int32))
        return self.node("Slice", name, [x, s, e])

    def split(self, name: str, x: str, axis: int, sizes: Sequence[int] | None = None) -> list[str]:
        count = len(sizes) if sizes else 2
        outs = [f"{name}/out{i + 1}" for i in range(count)]
        inputs = [x]
        if sizes:
            inputs.append(self.initializer(name + "/split", np.asarray(sizes, np.int64)))
        elif self.opset >= 18:
            self.node("Split", name, inputs, outs, axis=axis, num_outputs=count)
            return outs
        self.node("Split", name, inputs, outs, axis=axis)
        return outs

    def concat(self, name: str, xs: Sequence[str], axis: int) -> str:
        return self.node("Concat", name, list(xs), axis=axis)

    def gather(self, name: str, x: str, indices: str, axis: int) -> str:
        return self.node("Gather", name, [x, indices], axis=axis)

    def reduce_mean(self, name: str, x: str, axes: Sequence[int], keepdims: bool) -> str:
        if self.opset >= 18:
            axes_name = self.int64(name + "/axes", axes)
            return self.node("ReduceMean", name, [x, axes_name], keepdims=int(keepdims))
        return self.node("ReduceMean", name, [x], axes=list(axes), keepdims=int(keepdims))

    def cast(self, name: str, x: str, to: int) -> str:
        return self.node("Cast", name, [x], to=to)

    # ------------------------------------------------------------------ model
    def add_input(self, name: str, dims: Sequence[int | str]) -> None:
        self.inputs.append(helper.make_tensor_value_info(name, self.elem_type, list(dims)))

    def add_output(self, name: str, dims: Sequence[int | str]) -> None:
        self.outputs.append(helper.make_tensor_value_info(name, self.elem_type, list(dims)))

    def model(self, graph_name: str, metadata: dict[str, str]) -> onnx.ModelProto:
        graph = helper.make_graph(
            self.nodes, graph_name, self.inputs, self.outputs, list(self.initializers.values())
        )
        model = helper.make_model(
            graph,
            opset_imports=[helper.make_opsetid("", self.opset)],
            producer_name="xlazero",
            ir_version=8,
        )
        for key, value in metadata.items():
            model.metadata_props.add(key=key, value=value)
        return model


def _tensor(name: str, array: np.ndarray) -> onnx.TensorProto:
    if array.dtype.name == "bfloat16":
        t = onnx.TensorProto(name=name, data_type=TensorProto.BFLOAT16, dims=list(array.shape))
        t.raw_data = array.view(np.uint16).astype("<u2").tobytes()
        return t
    return onnx.numpy_helper.from_array(np.ascontiguousarray(array), name)
