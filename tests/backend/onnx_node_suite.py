"""ONNX's own backend node tests (onnx.backend.test) run through our converter, for the ops we
support. Not collected by default (it compiles ~1,000 small graphs); run it explicitly:

    .venv/bin/python -m pytest -q -p no:cacheprovider tests/backend/onnx_node_suite.py

docs/backend.md records the pass count.
"""

from __future__ import annotations

import re

import numpy as np
import onnx
import onnx.backend.base
import onnx.backend.test

from backend_xla.convert import Converter
from backend_xla.onnx_io import onnx_to_np_dtype
from backend_xla.ops import supported_ops


class XlaBackendRep(onnx.backend.base.BackendRep):
    def __init__(self, model: onnx.ModelProto):
        self.model = model

    def run(self, inputs, **kwargs):
        import jax

        inputs = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        names = [i.name for i in self.model.graph.input
                 if i.name not in {t.name for t in self.model.graph.initializer}]
        feed = dict(zip(names, inputs))
        model = _bind(self.model, feed)
        conv = Converter(model, "<onnx node test>")
        fn, _ = conv.function(1)
        outs = jax.jit(fn)(conv.params, *[feed[i.name] for i in conv.inputs])
        result = []
        for value, out in zip(self.model.graph.output, outs):
            # JAX runs without x64; hand back the declared (64-bit) type.
            result.append(np.asarray(out).astype(onnx_to_np_dtype(value.type.tensor_type.elem_type)))
        return result


def _bind(model: onnx.ModelProto, feed: dict) -> onnx.ModelProto:
    """Adapt a node test to a static-shape compiler, as an exporter of a real network would:
    integer inputs (shapes, axes, indices) become initializers, and every remaining input gets
    the static shape of the value it is fed."""
    from onnx import numpy_helper

    model = onnx.ModelProto.FromString(model.SerializeToString())
    keep = []
    for value in model.graph.input:
        array = np.asarray(feed.get(value.name)) if value.name in feed else None
        if array is not None and array.dtype.kind in "iu":
            model.graph.initializer.append(numpy_helper.from_array(array, value.name))
            continue
        if array is not None:
            shape = value.type.tensor_type.shape
            shape.ClearField("dim")
            for d in array.shape:
                shape.dim.add().dim_value = d
        keep.append(value)
    del model.graph.input[:]
    model.graph.input.extend(keep)
    return model


class XlaBackend(onnx.backend.base.Backend):
    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        super().prepare(model, device, **kwargs)
        return XlaBackendRep(model)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


def _snake(op: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


backend_test = onnx.backend.test.BackendTest(XlaBackend, __name__)
for op in supported_ops():
    backend_test.include(rf"^test_{_snake(op)}(_.*)?_cpu$")
# Variants outside what the converter implements (documented in docs/backend.md): string,
# 8-bit float and 2/4-bit int casts, sequence and optional types, training-mode batch norm, expanded function bodies (they need ops we
# don't register), and test names that merely start with a supported op's name.
for pattern in (r".*_expanded.*", r".*FLOAT8.*", r".*float8.*", r".*STRING.*", r".*string.*",
                r".*INT4.*", r".*int4.*", r".*INT2.*", r".*FLOAT4.*", r".*training.*",
                r".*_cast_.*e8m0.*", r".*_sequence.*", r".*_opt_.*"):
    backend_test.exclude(pattern)

globals().update(backend_test.enable_report().test_cases)
