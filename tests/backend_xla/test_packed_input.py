"""Packed planes expanded on the device (backend option ``packed_input``, auto on an
accelerator): against lc0's outputs, against the float planes in the engine's own searches, and
the errors of what cannot be packed."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import lc0_planes_batch
from test_backend_maia import MAIA_LOGIT_TOL, MAIA_VALUE_TOL
from xla_testutil import legal_logit_error, need_shared, root_visits

import backend_xla
from backend_xla.errors import NetworkError
from backend_xla.packed import pack_planes
from engine.search import SearchParams


@pytest.fixture(scope="module")
def packed_maia(maia1100_b16_packed):
    """Maia-1100 with packed_input=on, one batch size (BATCHES_OF_16: the search's minibatch
    below; a batch of 64 refs is evaluated in four): conftest's one compile, which the
    policy-gather tests share."""
    return maia1100_b16_packed


@pytest.fixture(scope="module")
def plain_maia(maia1100_b16):
    """The same with float planes (conftest's one compile, shared likewise)."""
    return maia1100_b16


def test_packed_network_matches_lc0(packed_maia, maia1100_ref):
    refs = maia1100_ref[:64]
    masks, values = pack_planes(lc0_planes_batch(refs))
    assert masks.dtype == np.uint64 and masks.shape == (64, 112)
    out = packed_maia.evaluate_packed(masks, values)
    assert legal_logit_error(out.policy, refs) < MAIA_LOGIT_TOL
    np.testing.assert_allclose(out.q, [r["q"] for r in refs], atol=MAIA_VALUE_TOL, rtol=0)
    np.testing.assert_allclose(out.d, [r["d"] for r in refs], atol=MAIA_VALUE_TOL, rtol=0)
    assert packed_maia.attributes().packed_input


def test_search_visits_equal_with_packed_and_float_planes(packed_maia, plain_maia):
    """The search's own packed planes (its encoder's masks, bit s for square s) reach the
    network as its float planes do: every root visit the same."""
    assert not plain_maia.attributes().packed_input
    params = SearchParams(smart_pruning_factor=0.0, minibatch_size=16, threads=1)  # repeatable
    visits = [root_visits(net, params, 300) for net in (packed_maia, plain_maia)]
    # The search ends with the iteration that reaches 300 (lc0's): a minibatch of 16 and its
    # out-of-order backups past it at most.
    assert 299 <= sum(visits[0]) <= 299 + 16 + 38 and visits[0] == visits[1]


def test_unpackable_planes_are_refused(packed_maia, maia1100_ref):
    planes = lc0_planes_batch(maia1100_ref[:2])
    planes[1, 3, 0, 0], planes[1, 3, 0, 1] = 0.5, 0.25
    with pytest.raises(NetworkError, match="several nonzero values"):
        packed_maia.evaluate(planes)


def test_packed_input_needs_lc0_planes_and_a_packed_network(packed_maia, plain_maia, maia1100_ref):
    masks, values = pack_planes(lc0_planes_batch(maia1100_ref[:2]))
    with pytest.raises(NetworkError, match="expected a network loaded with packed_input"):
        plain_maia.evaluate_packed(masks, values)
    with pytest.raises(NetworkError, match="expected masks uint64"):
        packed_maia.evaluate_packed(masks.astype(np.int64), values)


def test_packed_input_on_a_graph_without_lc0_planes_names_its_inputs():
    """The converter refuses to pack a graph whose input is not lc0's 112 planes (a network
    file is refused earlier still, for its input's name)."""
    from onnx import TensorProto, helper

    from backend_xla.onnx_to_jax import Converter

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, 8, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 3, 8, 8])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [y])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(NetworkError, match=r"three: packed_input: expected one input of \[N, 112"):
        Converter(model, "three", packed_input=True)
    assert not Converter(model, "three").packed_input
