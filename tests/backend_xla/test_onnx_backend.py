"""ONNX's own backend node tests (onnx.backend.test) through ``backend_xla.onnx_backend``.

Selected are the node tests whose graph uses only ops the converter registers, with tensor
inputs and outputs of element types it handles (no strings, 8/4/2-bit floats or ints, sequences,
optionals). By default one test per supported op runs (the first of onnx's cases whose graph is
that op alone, loaded from that op's case module only); ``--run-slow`` runs every selected test
(loading all of onnx's node cases takes ~25 s on its own). docs/backend.md records the counts.
Expected outputs are onnx's (numpy reference implementations); the comparison is onnx's own
(``Runner.assert_similar_outputs``, each case's rtol/atol).
"""

from __future__ import annotations

import importlib
import re
import warnings

import numpy as np
import onnx
import pytest
from onnx.backend.test.case.test_case import TestCase
from onnx.backend.test.runner import Runner

from backend_xla.onnx_backend import XlaBackend
from backend_xla.ops import supported_ops

_T = onnx.TensorProto
_ELEM_TYPES = {_T.FLOAT, _T.FLOAT16, _T.BFLOAT16, _T.DOUBLE, _T.BOOL, _T.INT8, _T.INT16, _T.INT32,
               _T.INT64, _T.UINT8, _T.UINT16, _T.UINT32, _T.UINT64}
# Case modules whose name is not the op's name in lower or snake case.
_MODULE_ALIASES = {"Range": "rangeop", "And": "and_", "Or": "or_", "Not": "not_"}
# Node tests that fail, and why (docs/backend.md). Strict: one that starts passing is reported.
# Range's output length depends on start/limit/delta; integer ones fed at run time are bound as
# constants by the backend, floating ones cannot be (exporters make them constants anyway).
KNOWN_FAILURES = {f"test_range_{t}_type_positive_delta": "Range with floating bounds fed at run time"
                  for t in ("float", "float16", "bfloat16")}


def _snake(op: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", op).lower()


def selected(case: TestCase) -> bool:
    """Whether a node test is within what the converter supports."""
    graph = case.model.graph
    supported = set(supported_ops())
    if not all(n.domain in ("", "ai.onnx") and n.op_type in supported for n in graph.node):
        return False
    if any(a.name == "training_mode" and a.i for n in graph.node for a in n.attribute):
        return False  # BatchNormalization's training mode: the converter is for inference
    return all(v.type.HasField("tensor_type") and v.type.tensor_type.elem_type in _ELEM_TYPES
               for v in list(graph.input) + list(graph.output))


def _single_op_cases(op: str) -> list[TestCase]:
    """onnx's node cases whose graph is ``op`` alone, once ``op``'s case module is imported
    (importing registers its cases; one imported earlier by another module already did)."""
    from onnx.backend.test.case import node

    for name in (_MODULE_ALIASES.get(op), op.lower(), _snake(op)):
        if name is None:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # the case generators' own numpy overflow warnings
                importlib.import_module(f"onnx.backend.test.case.node.{name}")
        except ModuleNotFoundError:
            continue
        break
    return [c for c in node._NodeTestCases if [n.op_type for n in c.model.graph.node] == [op]]


def fast_cases() -> dict[str, TestCase | None]:
    """One node test per supported op: the first selected case whose graph is that op alone and
    that is not a known failure (``None`` for an op onnx has no such test for)."""
    chosen: dict[str, TestCase | None] = {}
    for op in supported_ops():
        candidates = [c for c in _single_op_cases(op) if selected(c) and c.name not in KNOWN_FAILURES]
        chosen[op] = candidates[0] if candidates else None
    return chosen


def all_cases() -> list[TestCase]:
    from onnx.backend.test.loader import load_model_tests

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [c for c in load_model_tests(kind="node") if selected(c)]


def run_case(case: TestCase) -> None:
    rep = XlaBackend.prepare(case.model, "CPU")
    for inputs, ref_outputs in case.data_sets:
        inputs = [onnx.numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x for x in inputs]
        ref_outputs = [onnx.numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x
                       for x in ref_outputs]
        Runner.assert_similar_outputs(ref_outputs, list(rep.run(inputs)), case.rtol, case.atol,
                                      model_dir=case.name)


# Ops without a single-op node test among the selected ones are left to test_backend_ops.py,
# which checks every registered op against onnx.reference.
_FAST = fast_cases()


@pytest.mark.parametrize("case", [c for c in _FAST.values() if c is not None], ids=lambda c: c.name)
def test_node_one_per_op(case):
    run_case(case)


def pytest_generate_tests(metafunc):
    if metafunc.function.__name__ != "test_node_all":
        return
    if metafunc.config.getoption("--run-slow"):
        cases = all_cases()
        params = [pytest.param(c, id=c.name, marks=[pytest.mark.xfail(
            reason=KNOWN_FAILURES[c.name], strict=True)] if c.name in KNOWN_FAILURES else [])
            for c in cases]
    else:  # skipped as slow: loading every node case alone is the cost to avoid
        params = [pytest.param(None, id="all")]
    metafunc.parametrize("case", params)


@pytest.mark.slow
def test_node_all(case):
    run_case(case)


def test_run_node_and_supports_device():
    node = onnx.helper.make_node("Add", ["a", "b"], ["c"])
    a, b = np.arange(6, dtype=np.float32).reshape(2, 3), np.float32(0.5)
    (c,) = XlaBackend.run_node(node, [a, b])
    np.testing.assert_array_equal(c, a + b)
    assert XlaBackend.supports_device("CPU") and not XlaBackend.supports_device("CUDA:99")
