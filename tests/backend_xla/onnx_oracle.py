"""Run one-node ONNX graphs through our converter and through onnx.reference.ReferenceEvaluator."""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

from backend_xla.onnx_to_jax import Converter

IR_VERSION = 8


def make_model(op: str, inputs: list, attrs: dict | None = None, n_out: int = 1,
               opset: int = 17) -> tuple[onnx.ModelProto, dict]:
    """``inputs``: list of (name, array | None, kind) with kind 'in' (graph input), 'init'
    (initializer) or '' for an omitted optional input. Returns the model and the feeds."""
    graph_inputs, inits, feeds, names = [], [], {}, []
    for name, value, kind in inputs:
        names.append(name if kind else "")
        if kind == "in":
            elem = helper.np_dtype_to_tensor_dtype(value.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, value.shape))
            feeds[name] = value
        elif kind == "init":
            inits.append(numpy_helper.from_array(np.asarray(value), name))
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, names, outs, name=f"test_{op}", **(attrs or {}))
    graph = helper.make_graph([node], "g", graph_inputs,
                              [helper.make_tensor_value_info(o, 0, None) for o in outs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=IR_VERSION)
    return model, feeds


def run_ours(model: onnx.ModelProto, feeds: dict, inline_limit: int = 1024) -> list[np.ndarray]:
    import jax

    conv = Converter(model, "<test>", max_inline_constant_size=inline_limit)
    fn, _ = conv.function(1)
    out = jax.jit(fn)(conv.params_for(False), *[feeds[i.name] for i in conv.inputs])
    return [np.asarray(o) for o in out]


def run_reference(model: onnx.ModelProto, feeds: dict) -> list[np.ndarray]:
    return [np.asarray(o) for o in ReferenceEvaluator(model).run(None, feeds)]


def check(op: str, inputs: list, attrs: dict | None = None, n_out: int = 1, opset: int = 17,
          rtol: float = 1e-5, atol: float = 1e-6) -> None:
    """Assert that our conversion of the node equals the reference evaluator's output, both
    with tensors as traced inputs and (for the graph inputs) as folded constants."""
    model, feeds = make_model(op, inputs, attrs, n_out, opset)
    expected = run_reference(model, feeds)
    folded_inputs = [(n, v, "init" if k == "in" else k) for n, v, k in inputs]
    folded, _ = make_model(op, folded_inputs, attrs, n_out, opset)
    for label, got in (("traced", run_ours(model, feeds)),
                       ("folded", run_ours(folded, {}, inline_limit=1 << 30))):
        assert len(got) == len(expected), f"{op} ({label}): expected {len(expected)} outputs, got {len(got)}"
        for i, (g, e) in enumerate(zip(got, expected)):
            assert g.shape == e.shape, f"{op} ({label}) output {i}: expected shape {e.shape}, got {g.shape}"
            # JAX runs without x64: int64 outputs come back as int32 (folding inside uses int64).
            want = np.dtype(np.int32) if e.dtype == np.int64 else e.dtype
            assert g.dtype == want, f"{op} ({label}) output {i}: expected {e.dtype}, got {g.dtype}"
            np.testing.assert_allclose(g.astype(np.float64), e.astype(np.float64), rtol=rtol,
                                       atol=atol, err_msg=f"{op} ({label}) output {i}")
