"""On a GPU: the low-precision compute types against lc0's f32 outputs, and a batch split over
every local device. Marked ``gpu``: skipped where JAX sees no GPU (conftest), run wherever
there is one. The tolerances are docs/backend.md's accuracy table (measured on the CPU) with
the same headroom the f32 tests keep; a GPU's f16/bf16 kernels round differently, not worse.
"""

from __future__ import annotations

import numpy as np
import pytest

import backend_xla
from conftest import lc0_planes_batch
from xla_testutil import legal_logit_error, need_shared

GPU_OPTIONS = "batch_buckets=1;64;128,cache_dir=none,background_compile=0"

LOW_PRECISION_TOLERANCES = {
    # data_type: (legal policy logits, q and d), max |ours - lc0 f32| over the shared positions
    "f16": (5e-2, 1e-2),
    "bf16": (4e-1, 6e-2),
}
TOP_MOVE_CHANGES = {"f16": 5, "bf16": 20}
"""Positions of 301 whose best legal move may differ from lc0's f32 (docs: 1 and 7 measured)."""


def _top_moves(policy: np.ndarray, records: list[dict]) -> np.ndarray:
    return np.array([r["policy_indices"][int(np.argmax(policy[i, r["policy_indices"]]))]
                     for i, r in enumerate(records) if r["policy_indices"]])


def check_low_precision(data_type: str, records: list[dict], options: str = GPU_OPTIONS) -> None:
    net = backend_xla.load_network(need_shared("maia", "maia-1100.onnx"),
                                   f"{options},data_type={data_type}")
    planes = lc0_planes_batch(records)
    out = net.evaluate(planes)
    logit_tol, value_tol = LOW_PRECISION_TOLERANCES[data_type]
    assert out.policy.dtype == np.float32  # evaluate's outputs stay f32 whatever the compute type
    assert legal_logit_error(out.policy, records) < logit_tol
    np.testing.assert_allclose(out.q, [r["q"] for r in records], atol=value_tol, rtol=0)
    np.testing.assert_allclose(out.d, [r["d"] for r in records], atol=value_tol, rtol=0)
    ref_top = np.array([r["policy_indices"][int(np.argmax(r["p_raw"]))] for r in records
                        if r["policy_indices"]])
    assert int((_top_moves(out.policy, records) != ref_top).sum()) <= TOP_MOVE_CHANGES[data_type]


def check_split_over_devices(records: list[dict], options: str = GPU_OPTIONS) -> None:
    """device=all splits each batch over every local device: the same outputs as one device."""
    import jax

    planes = lc0_planes_batch(records[:128])
    path = need_shared("maia", "maia-1100.onnx")
    one = backend_xla.load_network(path, f"{options},device=0").evaluate(planes)
    split_net = backend_xla.load_network(path, f"{options},device=all,split_min_rows=1")
    assert len(split_net.devices) == len(jax.local_devices())
    assert f"{len(split_net.devices)} device(s)" in split_net.describe()[0]
    split = split_net.evaluate(planes)
    np.testing.assert_allclose(split.policy, one.policy, atol=1e-4, rtol=0)
    np.testing.assert_allclose(split.q, one.q, atol=1e-5, rtol=0)


def check_gather_and_calls_at_once(
    records: list[dict], options: str = GPU_OPTIONS, data_type: str = "bf16"
) -> None:
    """The search's way of calling on an accelerator (auto: the legal moves' logits gathered on
    the device, two calls at once): the gathered logits are the whole policy's, and calls from
    two threads at once answer as one at a time."""
    from concurrent.futures import ThreadPoolExecutor

    net = backend_xla.load_network(
        need_shared("maia", "maia-1100.onnx"), f"{options},data_type={data_type}"
    )
    attributes = net.attributes()
    assert attributes.policy_gather and attributes.concurrency == 2
    planes = lc0_planes_batch(records[:128])
    legal = np.zeros((len(planes), 64), np.int32)
    for i, r in enumerate(records[:128]):
        legal[i, : len(r["policy_indices"])] = r["policy_indices"][:64]
    whole = net.evaluate(planes)
    gathered = net.evaluate(planes, legal=legal)
    np.testing.assert_array_equal(gathered.policy, np.take_along_axis(whole.policy, legal, axis=1))
    halves = [(planes[:64], legal[:64]), (planes[64:], legal[64:])]
    with ThreadPoolExecutor(2) as pool:
        outs = list(pool.map(lambda half: net.evaluate(half[0], legal=half[1]), halves * 4))
    for out, (p, g) in zip(outs, halves * 4):
        alone = net.evaluate(p, legal=g)
        np.testing.assert_array_equal(out.policy, alone.policy)
        np.testing.assert_array_equal(out.q, alone.q)


def test_the_accelerators_way_of_calling_checked_on_the_cpu(maia1100_ref):
    """:func:`check_gather_and_calls_at_once` itself, here with the options auto gives a GPU
    (one batch size, f32: a CPU computes bf16 slowly)."""
    options = "batch_buckets=64,cache_dir=none,background_compile=0,device=0"
    check_gather_and_calls_at_once(
        maia1100_ref, f"{options},policy_gather=on,device_calls=2", data_type="f32"
    )


@pytest.mark.gpu
def test_gathered_policy_and_two_calls_at_once_on_gpu(maia1100_ref):
    check_gather_and_calls_at_once(maia1100_ref)


@pytest.mark.gpu
@pytest.mark.parametrize("data_type", ["f16", "bf16"])
def test_low_precision_on_gpu_matches_lc0_f32(data_type, maia1100_ref):
    check_low_precision(data_type, maia1100_ref)


@pytest.mark.gpu
def test_batch_split_over_every_gpu(maia1100_ref):
    check_split_over_devices(maia1100_ref)
