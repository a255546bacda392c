"""Maia (SE-ResNet 6x64, WDL) through the XLA backend against lc0's own outputs."""

from __future__ import annotations

import numpy as np
import pytest

import backend_xla
from engine.backend import POLICY_SIZE, load_network
from conftest import lc0_planes_batch
from xla_testutil import ONE_SIZE_OPTIONS, TEST_OPTIONS, legal_logit_error, need_shared

# lc0's reference tolerances for f32 Maia (see ../shared/README.md).
MAIA_LOGIT_TOL = 5e-3
MAIA_VALUE_TOL = 1e-4


@pytest.fixture(scope="module")
def maia1100():
    return backend_xla.load_network(need_shared("maia", "maia-1100.onnx"), TEST_OPTIONS)


def test_maia1100_matches_lc0_on_every_position(maia1100, maia1100_ref):
    planes = lc0_planes_batch(maia1100_ref)
    out = maia1100.evaluate(planes)
    assert out.policy.shape == (len(maia1100_ref), POLICY_SIZE)
    assert out.policy.dtype == np.float32
    assert legal_logit_error(out.policy, maia1100_ref) < MAIA_LOGIT_TOL
    np.testing.assert_allclose(out.q, [r["q"] for r in maia1100_ref], atol=MAIA_VALUE_TOL, rtol=0)
    np.testing.assert_allclose(out.d, [r["d"] for r in maia1100_ref], atol=MAIA_VALUE_TOL, rtol=0)
    assert not out.m.any()


def test_maia_attributes(maia1100):
    assert (maia1100.input_format, maia1100.has_wdl, maia1100.has_mlh) == (1, True, False)
    assert maia1100.max_batch == 64
    assert maia1100.ready_sizes == [1, 64]


def test_single_rows_equal_batched_rows(maia1100, maia1100_ref):
    """Padding and splitting must not change results: 1-row, 70-row (split 64+6) and full."""
    planes = lc0_planes_batch(maia1100_ref[:70])
    batched = maia1100.evaluate(planes)
    for i in (0, 5, 69):
        alone = maia1100.evaluate(planes[i:i + 1])
        np.testing.assert_allclose(alone.policy[0], batched.policy[i], atol=1e-5)
        np.testing.assert_allclose(alone.q[0], batched.q[i], atol=1e-6)


def test_registered_with_engine(maia1100_ref):
    net = load_network(str(need_shared("maia", "maia-1500.onnx")), ONE_SIZE_OPTIONS, backend="xla")
    from conftest import read_jsonl

    refs = read_jsonl(need_shared("maia", "ref-maia-1500.jsonl.gz"))[:64]
    out = net.evaluate(lc0_planes_batch(refs))
    assert legal_logit_error(out.policy, refs) < MAIA_LOGIT_TOL
    np.testing.assert_allclose(out.q, [r["q"] for r in refs], atol=MAIA_VALUE_TOL, rtol=0)
