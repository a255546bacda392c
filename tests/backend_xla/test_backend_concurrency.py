"""Unsplit batches run whole on any free device, so that concurrent ``evaluate`` calls (the
search's two batches in flight) keep every core busy: each device's program must give the
same outputs, and concurrent calls the same as serial ones."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from backend_xla.network import CONCURRENT_CALLS
from conftest import xla_network

ZOO_NET = ("zoo", "se-b2f32-polclassical-wdl-mlh-mish-bn.onnx")


def _planes(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    planes = (rng.random((n, 112, 8, 8)) < 0.1).astype(np.float32)
    planes[:, 111] = 1.0
    return planes


@pytest.fixture(scope="module")
def net():
    network = xla_network(*ZOO_NET)
    if len(network.devices) < 2:
        pytest.skip(f"needs 2+ host devices, JAX has {len(network.devices)} (a 1-core machine)")
    return network


def test_each_device_runs_its_own_copy_with_equal_outputs(net):
    executable = net._compiled[8]
    assert net.concurrency == min(len(net.devices), CONCURRENT_CALLS) == executable.copies
    planes = _planes(8, 0)
    outputs = []
    for copy, device in enumerate(net.devices[:executable.copies]):
        results = executable(planes, copy=copy)
        assert {d for r in results for d in r.devices()} == {device}
        outputs.append([np.asarray(r) for r in results])
    for other in outputs[1:]:
        for a, b in zip(outputs[0], other):
            np.testing.assert_array_equal(a, b)


def test_concurrent_calls_equal_serial_calls(net):
    batches = [_planes(7, seed) for seed in range(12)]
    serial = [net.evaluate(b) for b in batches]
    with ThreadPoolExecutor(max_workers=net.concurrency) as pool:
        concurrent = list(pool.map(net.evaluate, batches))
    for s, c in zip(serial, concurrent):
        np.testing.assert_array_equal(s.policy, c.policy)
        np.testing.assert_array_equal(s.q, c.q)
    # Every device was handed back: as many as there are devices are free again.
    assert net._free_devices.qsize() == net.concurrency
