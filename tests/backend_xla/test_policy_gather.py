"""The legal moves' logits gathered on the device (backend option ``policy_gather``, auto on an
accelerator): the same logits as the whole policy holds, through every path a batch takes (a
batch split over two devices: test_backend_speed_paths.py's child), and the same search."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import BATCHES_OF_16, lc0_planes_batch
from test_backend_maia import MAIA_LOGIT_TOL
from xla_testutil import need_shared, root_visits

import backend_xla
from backend_xla.errors import NetworkError
from backend_xla.network import gather_policy
from backend_xla.packed import pack_planes
from engine.backend import GATHER_WIDTHS
from engine.search import SearchParams

OPTIONS = BATCHES_OF_16
"""One batch size: a batch of 40 runs in three calls, the last padded."""


def legal_indices(records: list[dict], width: int = 256) -> np.ndarray:
    """int32 [N, width]: each record's legal moves' policy indices as lc0 lists them, the rest
    of a row past them left at values a search's batch may hold (other rows' indices)."""
    rng = np.random.default_rng(1)
    out = rng.integers(0, 1858, (len(records), width)).astype(np.int32)
    for i, r in enumerate(records):
        out[i, : len(r["policy_indices"])] = r["policy_indices"]
    return out


@pytest.fixture(scope="module")
def maia(maia1100_b16):
    """Maia-1100 with OPTIONS (conftest's one compile, which the packed-input tests share)."""
    return maia1100_b16


@pytest.mark.parametrize("packed", [False, True], ids=["float", "packed"])
def test_gathered_logits_are_the_policys_own(maia, maia1100_b16_packed, maia1100_ref, packed):
    refs = [r for r in maia1100_ref if r["policy_indices"]][:40]
    planes = lc0_planes_batch(refs)
    legal = legal_indices(refs)
    legal[0, -1], legal[1, -1] = -5, 4000  # past a row's moves anything may lie: read clipped
    net = maia
    if packed:
        net = maia1100_b16_packed  # OPTIONS with packed_input=on
        whole = net.evaluate_packed(*pack_planes(planes))
        gathered = net.evaluate_packed(*pack_planes(planes), legal=legal)
    else:
        whole = net.evaluate(planes)
        gathered = net.evaluate(planes, legal=legal)
    assert gathered.policy.shape == (40, 256) and gathered.policy.dtype == np.float32
    clipped = np.clip(legal, 0, 1857)
    np.testing.assert_array_equal(gathered.policy, np.take_along_axis(whole.policy, clipped, axis=1))
    narrow = net.evaluate(planes[:5], legal=legal[:5, :64])
    np.testing.assert_array_equal(narrow.policy, gathered.policy[:5, :64])
    np.testing.assert_array_equal(gathered.q, whole.q)
    errs = [
        np.abs(gathered.policy[i, : len(r["p_raw"])] - r["p_raw"]).max() for i, r in enumerate(refs)
    ]
    assert max(errs) < MAIA_LOGIT_TOL


def test_bad_indices_are_refused_naming_the_file(maia):
    planes = np.zeros((3, 112, 8, 8), np.float32)
    with pytest.raises(
        NetworkError,
        match=r"maia-1100.onnx: evaluate: expected legal policy indices, integers \[3, K>=1\], got float64 \[3, 4\]",
    ):
        maia.evaluate(planes, legal=np.zeros((3, 4)))
    with pytest.raises(NetworkError, match=r"got int32 \[2, 4\]"):
        maia.evaluate(planes, legal=np.zeros((2, 4), np.int32))


def test_the_option_tells_the_search_and_the_search_is_the_same(maia):
    """With ``policy_gather=on`` the search passes its legal moves, as wide as its batch's most
    moves need, and sorts the gathered logits: every root visit as with the whole policy (the
    same logits, bit for bit). The load compiled the gather at every width the search passes:
    the searches compile none (a batch size no other test uses, since JAX shares the jitted
    gather's programs by shape)."""
    path, options = need_shared("maia", "maia-1100.onnx"), OPTIONS.replace("=16,", "=24,")
    before = gather_policy()._cache_size()
    on = backend_xla.load_network(path, options + ",policy_gather=on")
    compiled = gather_policy()._cache_size()
    assert compiled - before == len(GATHER_WIDTHS)
    off = backend_xla.load_network(path, options)
    assert on.attributes().policy_gather and not off.attributes().policy_gather  # auto: off on a CPU
    params = SearchParams(smart_pruning_factor=0.0, minibatch_size=16, threads=1)  # repeatable
    visits, calls = [], []
    for net in (on, off):
        seen = []
        evaluate = net.evaluate

        def spy(planes, legal=None, evaluate=evaluate, seen=seen):
            seen.append(None if legal is None else legal.shape[1])
            return evaluate(planes, legal=legal)

        net.evaluate = spy
        try:
            visits.append(root_visits(net, params, 300))
        finally:
            del net.evaluate
        calls.append(seen)
    assert set(calls[0]) <= set(GATHER_WIDTHS) - {256}  # a middlegame: 33-64 moves a batch
    assert set(calls[1]) == {None}
    assert 299 <= sum(visits[0]) <= 299 + 16 + 38 and visits[0] == visits[1]  # as lc0's end
    assert gather_policy()._cache_size() == compiled  # nothing compiled during the searches
