"""Each supported ONNX op against onnx.reference.ReferenceEvaluator, on several shapes and
attribute variants, both traced (inputs from the network) and folded (constants)."""

from __future__ import annotations

import numpy as np
import pytest

from backend_xla.ops import supported_ops
from onnx_oracle import check

RNG = np.random.default_rng(1234)
F32 = np.float32
I64 = np.int64


def r(*shape, lo=-2.0, hi=2.0, dtype=F32):
    return RNG.uniform(lo, hi, shape).astype(dtype)


def pos(*shape):
    return r(*shape, lo=0.1, hi=3.0)


def ints(*values):
    return np.array(values, I64)


A, B = ("a", "in"), ("b", "in")
CASES = []


def case(op, inputs, attrs=None, n_out=1, opset=17, tol=1e-5, id=None):
    CASES.append(pytest.param(op, inputs, attrs, n_out, opset, tol, id=id or f"{op}-{len(CASES)}"))


# Element-wise binary ops with broadcasting.
for op in ("Add", "Sub", "Mul", "Max", "Min"):
    case(op, [("a", r(2, 3, 4), "in"), ("b", r(4), "in")])
    case(op, [("a", r(3, 1, 5), "in"), ("b", r(1, 4, 1), "in")])
case("Div", [("a", r(2, 3), "in"), ("b", pos(2, 3), "in")])
case("Div", [("a", r(2, 3), "in"), ("b", pos(1, 3), "in")])
case("Div", [("a", ints(7, -7, 9, -9), "in"), ("b", ints(2, 2, -4, -4), "in")], id="Div-int-trunc")
case("Pow", [("a", pos(3, 4), "in"), ("b", r(4), "in")])
case("Pow", [("a", r(3, 4), "in"), ("b", np.array(2.0, F32), "in")])
case("Max", [("a", r(2, 3), "in"), ("b", r(3), "in"), ("c", r(2, 1), "in")], id="Max-3")
case("Min", [("a", r(4), "in")], id="Min-1")
for op in ("Equal", "Less", "Greater"):
    case(op, [("a", RNG.integers(0, 3, (3, 4)).astype(F32), "in"),
              ("b", RNG.integers(0, 3, (4,)).astype(F32), "in")])
    case(op, [("a", ints(1, 2, 3), "in"), ("b", ints(2), "in")])
for op in ("And", "Or"):
    case(op, [("a", RNG.integers(0, 2, (3, 4)).astype(bool), "in"),
              ("b", RNG.integers(0, 2, (4,)).astype(bool), "in")])
case("Not", [("a", RNG.integers(0, 2, (3, 4)).astype(bool), "in")])
case("Where", [("c", RNG.integers(0, 2, (3, 1)).astype(bool), "in"), ("a", r(3, 4), "in"),
               ("b", r(4), "in")])

# Unary ops and activations.
for op in ("Relu", "Sigmoid", "Tanh", "Exp", "Neg", "Abs", "Erf", "Softplus", "Mish", "Identity"):
    # Mish entered the default domain in opset 18.
    case(op, [("a", r(2, 3, 4, lo=-6, hi=6), "in")], opset=18 if op == "Mish" else 17)
    case(op, [("a", r(7), "in")], opset=18 if op == "Mish" else 17)
for op in ("Sqrt", "Log", "Reciprocal"):
    case(op, [("a", pos(3, 5), "in")])
case("Elu", [("a", r(3, 5), "in")])
case("Elu", [("a", r(3, 5), "in")], {"alpha": 0.5})
case("Selu", [("a", r(3, 5), "in")])
case("Selu", [("a", r(3, 5), "in")], {"alpha": 1.5, "gamma": 0.8})
case("Clip", [("a", r(3, 5), "in"), ("lo", np.array(-0.5, F32), "init"),
              ("hi", np.array(0.7, F32), "init")])
case("Clip", [("a", r(3, 5), "in"), ("lo", None, ""), ("hi", np.array(0.3, F32), "init")])
case("Clip", [("a", r(3, 5), "in")], id="Clip-noop")
for to, src in ((1, ints(1, -2, 3)), (7, r(2, 3, lo=-9, hi=9)), (10, r(2, 3)), (9, r(4))):
    case("Cast", [("a", src, "in")], {"to": to}, tol=1e-3)

# Convolution and matrix products.
case("Conv", [("x", r(2, 3, 8, 8), "in"), ("w", r(4, 3, 3, 3), "init"), ("b", r(4), "init")],
     {"pads": [1, 1, 1, 1], "kernel_shape": [3, 3]}, tol=1e-4)
case("Conv", [("x", r(1, 4, 8, 8), "in"), ("w", r(6, 2, 3, 3), "init")],
     {"group": 2, "strides": [2, 2]}, tol=1e-4)
case("Conv", [("x", r(1, 2, 9, 7), "in"), ("w", r(3, 2, 3, 2), "init")],
     {"dilations": [2, 1], "auto_pad": "SAME_UPPER"}, tol=1e-4)
case("Conv", [("x", r(1, 2, 9, 7), "in"), ("w", r(3, 2, 2, 2), "init")],
     {"strides": [2, 2], "auto_pad": "SAME_LOWER"}, tol=1e-4)
case("Conv", [("x", r(1, 2, 6, 6), "in"), ("w", r(3, 2, 3, 3), "init")],
     {"auto_pad": "VALID"}, tol=1e-4)
case("Conv", [("x", r(2, 3, 10), "in"), ("w", r(2, 3, 3), "init")], {"pads": [2, 0]}, tol=1e-4,
     id="Conv-1d")
case("Conv", [("x", r(1, 4, 8, 8), "in"), ("w", r(4, 1, 3, 3), "init")],
     {"group": 4, "pads": [1, 1, 1, 1]}, tol=1e-4, id="Conv-depthwise")
case("MatMul", [("a", r(3, 4), "in"), ("b", r(4, 5), "in")], tol=1e-4)
case("MatMul", [("a", r(2, 6, 3, 4), "in"), ("b", r(6, 4, 5), "in")], tol=1e-4)
case("MatMul", [("a", r(4), "in"), ("b", r(2, 4, 3), "in")], tol=1e-4)
case("MatMul", [("a", r(2, 3, 4), "in"), ("b", r(4), "in")], tol=1e-4)
case("Gemm", [("a", r(3, 4), "in"), ("b", r(4, 5), "init"), ("c", r(5), "init")], tol=1e-4)
case("Gemm", [("a", r(4, 3), "in"), ("b", r(5, 4), "init"), ("c", r(3, 1), "init")],
     {"transA": 1, "transB": 1, "alpha": 0.5, "beta": 2.0}, tol=1e-4)
case("Gemm", [("a", r(3, 4), "in"), ("b", r(4, 2), "in")], tol=1e-4, id="Gemm-noC")

# Reductions: opset 17 (attribute axes, ReduceSum input) and opset 18 (axes input).
for op in ("ReduceMean", "ReduceMax", "ReduceProd", "ReduceSumSquare", "ReduceMin"):
    case(op, [("a", r(2, 3, 4), "in")], {"axes": [1], "keepdims": 1}, tol=1e-5)
    case(op, [("a", r(2, 3, 4), "in")], {"axes": [-1, 0], "keepdims": 0}, tol=1e-5)
    case(op, [("a", r(2, 3, 4), "in")], tol=1e-5, id=f"{op}-all")
    case(op, [("a", r(2, 3, 4), "in"), ("axes", ints(-2), "init")], {"keepdims": 0}, opset=18,
         tol=1e-5, id=f"{op}-opset18")
case("ReduceSum", [("a", r(2, 3, 4), "in"), ("axes", ints(0, 2), "init")], tol=1e-5)
case("ReduceSum", [("a", r(2, 3, 4), "in")], {"keepdims": 0}, tol=1e-5, id="ReduceSum-all")
case("ReduceSum", [("a", r(2, 3, 4), "in"), ("axes", ints(), "init")],
     {"noop_with_empty_axes": 1}, id="ReduceSum-noop")
case("ReduceSum", [("a", r(2, 3, 4), "in")], {"axes": [1]}, opset=11, id="ReduceSum-opset11")
case("GlobalAveragePool", [("a", r(2, 3, 8, 8), "in")])
case("GlobalAveragePool", [("a", r(2, 3, 5), "in")])

# Normalization.
case("BatchNormalization", [("x", r(2, 3, 4, 4), "in"), ("s", r(3), "init"), ("b", r(3), "init"),
                            ("m", r(3), "init"), ("v", pos(3), "init")], tol=1e-5)
case("BatchNormalization", [("x", r(2, 3, 4), "in"), ("s", r(3), "init"), ("b", r(3), "init"),
                            ("m", r(3), "init"), ("v", pos(3), "init")], {"epsilon": 0.1})
case("LayerNormalization", [("x", r(2, 5, 8), "in"), ("s", r(8), "init"), ("b", r(8), "init")],
     tol=1e-5)
case("LayerNormalization", [("x", r(2, 5, 8), "in"), ("s", r(5, 8), "init")],
     {"axis": -2, "epsilon": 1e-3}, tol=1e-5)
case("LayerNormalization", [("x", r(2, 5, 8), "in"), ("s", r(8), "init"), ("b", r(8), "init")],
     n_out=3, tol=1e-5, id="LayerNormalization-3out")
case("Softmax", [("x", r(2, 3, 4, lo=-9, hi=9), "in")])
case("Softmax", [("x", r(2, 3, 4), "in")], {"axis": 1})

# Shape and data movement (shape inputs are initializers, as ONNX exporters write them).
case("Shape", [("x", r(2, 3, 4), "in")])
case("Shape", [("x", r(2, 3, 4), "in")], {"start": 1, "end": -1}, opset=17)
case("Reshape", [("x", r(2, 3, 4), "in"), ("s", ints(0, -1), "init")])
case("Reshape", [("x", r(2, 3, 4), "in"), ("s", ints(4, 1, 6), "init")])
case("Transpose", [("x", r(2, 3, 4), "in")])
case("Transpose", [("x", r(2, 3, 4, 5), "in")], {"perm": [0, 2, 3, 1]})
case("Squeeze", [("x", r(2, 1, 4, 1), "in"), ("axes", ints(-1), "init")])
case("Squeeze", [("x", r(2, 1, 4, 1), "in")])
case("Squeeze", [("x", r(2, 1, 4, 1), "in")], {"axes": [1]}, opset=11, id="Squeeze-opset11")
case("Unsqueeze", [("x", r(2, 4), "in"), ("axes", ints(0, -1), "init")])
case("Unsqueeze", [("x", r(2, 4), "in")], {"axes": [1]}, opset=11, id="Unsqueeze-opset11")
case("Concat", [("a", r(2, 3), "in"), ("b", r(2, 5), "in")], {"axis": -1})
case("Concat", [("a", ints(2, 3), "in"), ("b", ints(7), "in")], {"axis": 0})
case("Split", [("x", r(6, 4), "in"), ("s", ints(2, 4), "init")], {"axis": 0}, n_out=2)
case("Split", [("x", r(2, 6), "in")], {"axis": -1}, n_out=3)
case("Split", [("x", r(2, 7), "in")], {"axis": 1, "num_outputs": 3}, n_out=3, opset=18)
case("Split", [("x", r(2, 6), "in")], {"axis": 1, "split": [1, 5]}, n_out=2, opset=11)
case("Slice", [("x", r(5, 6), "in"), ("st", ints(1, -4), "init"), ("en", ints(4, 100), "init")])
case("Slice", [("x", r(5, 6), "in"), ("st", ints(-1), "init"), ("en", ints(-100), "init"),
               ("ax", ints(1), "init"), ("sp", ints(-2), "init")])
case("Slice", [("x", r(5, 6, 3), "in"), ("st", ints(0), "init"),
               ("en", ints(9223372036854775807), "init"), ("ax", ints(-1), "init"),
               ("sp", ints(2), "init")])
case("Gather", [("x", r(5, 4), "in"), ("i", ints(0, -1, 2), "init")], {"axis": 0})
case("Gather", [("x", r(3, 5, 4), "in"), ("i", np.array([[1, 0], [4, -2]], I64), "init")],
     {"axis": 1})
case("Gather", [("x", r(5, 4), "in"), ("i", np.array(3, I64), "init")], {"axis": -1})
case("Gather", [("x", r(5, 4), "in"), ("i", ints(0, 4, -3), "in")], id="Gather-traced-indices")
case("Expand", [("x", r(3, 1), "in"), ("s", ints(2, 1, 4), "init")])
case("Expand", [("x", r(3, 4), "in"), ("s", ints(1, 1), "init")])
case("Flatten", [("x", r(2, 3, 4), "in")])
case("Flatten", [("x", r(2, 3, 4), "in")], {"axis": -1})
case("Flatten", [("x", r(2, 3, 4), "in")], {"axis": 0})
case("Tile", [("x", r(2, 3), "in"), ("rep", ints(2, 3), "init")])
case("Pad", [("x", r(2, 3), "in"), ("p", ints(1, 0, 2, 1), "init")])
case("Pad", [("x", r(2, 3), "in"), ("p", ints(1, 1, 1, 1), "init"),
             ("v", np.array(1.5, F32), "init")])
case("Pad", [("x", r(3, 4), "in"), ("p", ints(2, 1, 0, 2), "init")], {"mode": "reflect"})
case("Pad", [("x", r(3, 4), "in"), ("p", ints(1, 2, 2, 0), "init")], {"mode": "edge"})
case("Pad", [("x", r(3, 4), "in"), ("p", ints(1, 2), "init"), ("v", None, ""),
             ("ax", ints(1), "init")], opset=18, id="Pad-axes")
case("ConstantOfShape", [("s", ints(2, 3), "init")])
case("ConstantOfShape", [("s", ints(4), "init")],
     {"value": __import__("onnx").numpy_helper.from_array(np.array([7], I64))})
case("Range", [("s", np.array(1, I64), "init"), ("l", np.array(10, I64), "init"),
               ("d", np.array(3, I64), "init")])
case("Range", [("s", np.array(5.0, F32), "init"), ("l", np.array(1.0, F32), "init"),
               ("d", np.array(-1.5, F32), "init")])


@pytest.mark.parametrize("op,inputs,attrs,n_out,opset,tol", CASES)
def test_op_matches_reference(op, inputs, attrs, n_out, opset, tol):
    check(op, inputs, attrs, n_out, opset, rtol=tol, atol=tol)


def test_constant_variants():
    import onnx
    from onnx import numpy_helper

    for attrs in ({"value": numpy_helper.from_array(r(2, 3))}, {"value_float": 2.5},
                  {"value_floats": [1.0, 2.0]}, {"value_int": 3}, {"value_ints": [4, 5]}):
        check("Constant", [], attrs)
    assert onnx  # imported for numpy_helper's registry


def test_every_lc0_onnx2hlo_op_is_registered():
    """The ops lc0's own onnx2hlo converts, plus the issue's extra list, all have handlers."""
    lc0_ops = ("Add BatchNormalization Cast Concat Conv Div Elu Exp Expand Gather GlobalAveragePool "
               "Greater Identity LayerNormalization Max MatMul Mish Mul Reciprocal ReduceMean "
               "ReduceProd ReduceSumSquare Relu Reshape Selu Shape Sigmoid Slice Softmax Softplus "
               "Split Sqrt Squeeze Sub Tanh Transpose Unsqueeze Where").split()
    extra = ("Constant ConstantOfShape Gemm Pow Erf Flatten Pad Clip Min Neg Abs Log ReduceSum "
             "ReduceMax Tile Range Equal Less Not And Or").split()
    missing = sorted(set(lc0_ops + extra) - set(supported_ops()))
    assert not missing, f"expected handlers for every op, got none for {missing}"
    tested = {p.values[0] for p in CASES} | {"Constant"}
    untested = sorted(set(lc0_ops + extra) - tested)
    assert not untested, f"ops without a reference test: {untested}"


def test_softmax_opset11_flattens_at_axis():
    """Opset < 13 Softmax normalizes over all dims from ``axis`` on (the reference evaluator
    implements the opset-13 rule for every opset, so the expectation is computed here)."""
    from onnx_oracle import make_model, run_ours

    x = r(2, 3, 4)
    model, feeds = make_model("Softmax", [("x", x, "in")], {"axis": 1}, opset=11)
    (got,) = run_ours(model, feeds)
    flat = np.exp(x.reshape(2, 12) - x.reshape(2, 12).max(1, keepdims=True))
    np.testing.assert_allclose(got, (flat / flat.sum(1, keepdims=True)).reshape(2, 3, 4), rtol=1e-5)
