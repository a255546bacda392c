"""Held-out check: networks and positions lc0's references never saw. Initializers of shared
ONNX files are perturbed and the planes are random; the truth is onnxruntime when installed,
else onnx.reference.ReferenceEvaluator."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

import backend_xla
from xla_testutil import need_shared

RNG = np.random.default_rng(99)
N_POSITIONS = 5
HELDOUT_OPTIONS = f"batch_buckets={N_POSITIONS},cache_dir=none,background_compile=0"
"""One compiled size, the batch evaluated (TEST_OPTIONS would compile 1 and 64 for 5 rows)."""
LOGIT_TOL = 2e-3
VALUE_TOL = 1e-4


def _perturbed(model: onnx.ModelProto) -> onnx.ModelProto:
    model = onnx.ModelProto.FromString(model.SerializeToString())
    for init in model.graph.initializer:
        value = numpy_helper.to_array(init)
        if value.dtype == np.float32 and value.size > 1:
            noise = RNG.normal(0, 0.1, value.shape).astype(np.float32)
            init.CopyFrom(numpy_helper.from_array(value * (1 + noise), init.name))
    return model


def _random_planes(n: int) -> np.ndarray:
    planes = (RNG.random((n, 112, 8, 8)) < 0.1).astype(np.float32)
    planes[:, 109] = RNG.integers(0, 100, (n, 1, 1))  # rule50 count plane
    planes[:, 111] = 1.0
    return planes


def _truth(model: onnx.ModelProto, planes: np.ndarray) -> dict[str, np.ndarray]:
    names = [o.name for o in model.graph.output]
    try:
        import onnxruntime as ort

        sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
        outs = sess.run(names, {"/input/planes": planes})
    except ImportError:
        from onnx.reference import ReferenceEvaluator

        outs = ReferenceEvaluator(model).run(names, {"/input/planes": planes})
    return dict(zip(names, outs))


@pytest.mark.parametrize("path", [("maia", "maia-1900.onnx"),
                                  ("zoo", "bt-e64h4-pemap-mish-smolgen-swish-ffnrelu2-wdl-mlh.onnx"),
                                  ("zoo", "se-b2f32-polattn-polenc1-wdl-relu.onnx")])
def test_perturbed_network_on_random_planes(path):
    model = _perturbed(onnx.load(need_shared(*path)))
    planes = _random_planes(N_POSITIONS)
    truth = _truth(model, planes)
    out = backend_xla.load_network(model, HELDOUT_OPTIONS).evaluate(planes)
    np.testing.assert_allclose(out.policy, truth["/output/policy"], atol=LOGIT_TOL, rtol=1e-4)
    wdl = truth["/output/wdl"]
    np.testing.assert_allclose(out.q, wdl[:, 0] - wdl[:, 2], atol=VALUE_TOL)
    np.testing.assert_allclose(out.d, wdl[:, 1], atol=VALUE_TOL)
    if "/output/mlh" in truth:
        np.testing.assert_allclose(out.m, truth["/output/mlh"][:, 0], atol=1e-3, rtol=1e-4)
