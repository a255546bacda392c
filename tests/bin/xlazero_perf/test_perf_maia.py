"""The hand-built Maia forward pass (xlazero_perf.maia) against onnx.reference on the real
maia-1100 network: every conv formulation and layout computes the ONNX graph's outputs."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from xlazero_perf.maia import load_maia, make_forward, nchw_flat_to_nhwc_flat
from conftest import need_shared

POLICY_ATOL = 1e-3  # the brief's bar on logits; measured ≤ 1.1e-4 for every method
WDL_ATOL = 1e-4


@pytest.fixture(scope="module")
def maia_reference():
    from onnx.reference import ReferenceEvaluator

    path = need_shared("maia", "maia-1100.onnx")
    rng = np.random.default_rng(0)
    planes = (rng.random((3, 112, 8, 8)) < 0.3).astype(np.float32)
    planes[:, 109] *= 37.0  # rule-50 plane carries the raw count
    policy, wdl = ReferenceEvaluator(str(path)).run(None, {"/input/planes": planes})
    return load_maia(str(path)), planes, policy, wdl


@pytest.mark.parametrize("kw", [
    dict(method="lax"),
    pytest.param(dict(method="im2col", micro_batch=2), marks=pytest.mark.slow),
    pytest.param(dict(method="winograd4"), marks=pytest.mark.slow),  # 15 Winograd convs: ~10 s compile
], ids=["lax-NHWC", "im2col-NHWC-microbatch", "winograd4-NHWC"])
def test_maia_forward_matches_onnx_reference(maia_reference, kw):
    wt, planes, policy, wdl = maia_reference
    got_p, got_w = jax.jit(make_forward(wt, **kw))(planes)
    assert got_p.shape == (3, 1858) and got_w.shape == (3, 3)
    np.testing.assert_allclose(np.asarray(got_p), policy, atol=POLICY_ATOL, rtol=0)
    np.testing.assert_allclose(np.asarray(got_w), wdl, atol=WDL_ATOL, rtol=0)


def test_nchw_flat_index_maps_to_same_element_in_nhwc():
    a = np.random.default_rng(0).standard_normal((5, 8, 8))  # [C, H, W]
    idx = np.array([0, 63, 64, 200, 319])
    np.testing.assert_array_equal(a.transpose(1, 2, 0).reshape(-1)[nchw_flat_to_nhwc_flat(idx, 5)],
                                  a.reshape(-1)[idx])
