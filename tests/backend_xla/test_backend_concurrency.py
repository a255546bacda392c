"""Unsplit batches run whole on any free device, so that concurrent ``evaluate`` calls (the
search's two batches in flight) keep every core busy: each device's program must give the
same outputs, and concurrent calls the same as serial ones.

The test processes have one host device each (tests/conftest.py), so the checks run in a child
interpreter given two."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO_ROOT, SMALL_BUCKETS, need_shared, run_in_child

ZOO_NET = ("zoo", "se-b2f32-polclassical-wdl-mlh-mish-bn.onnx")


def _planes(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    planes = (rng.random((n, 112, 8, 8)) < 0.1).astype(np.float32)
    planes[:, 111] = 1.0
    return planes


def check_each_device_runs_its_own_copy(net) -> None:
    from backend_xla.buckets import CONCURRENT_CALLS

    size = net.sizes[0]  # the one size compiled (conftest.SMALL_BUCKETS)
    executable = net.buckets.compiled[size]
    assert net.concurrency == min(len(net.devices), CONCURRENT_CALLS) == executable.copies == 2
    planes = _planes(size, 0)
    outputs = []
    for copy, device in enumerate(net.devices[:executable.copies]):
        results = executable(planes, copy=copy)
        assert {d for r in results for d in r.devices()} == {device}
        outputs.append([np.asarray(r) for r in results])
    for other in outputs[1:]:
        for a, b in zip(outputs[0], other):
            np.testing.assert_array_equal(a, b)


def check_concurrent_calls_equal_serial_calls(net) -> None:
    batches = [_planes(7, seed) for seed in range(12)]
    serial = [net.evaluate(b) for b in batches]
    with ThreadPoolExecutor(max_workers=net.concurrency) as pool:
        concurrent = list(pool.map(net.evaluate, batches))
    for s, c in zip(serial, concurrent):
        np.testing.assert_array_equal(s.policy, c.policy)
        np.testing.assert_array_equal(s.q, c.q)
    # Every device was handed back: as many as there are devices are free again.
    assert net._free_devices.qsize() == net.concurrency


CHILD = """
import sys; sys.path[:0] = [{here!r}, {tests!r}]
import backend_xla
import test_backend_concurrency as t
net = backend_xla.load_network({net!r}, {options!r})
t.check_each_device_runs_its_own_copy(net)
t.check_concurrent_calls_equal_serial_calls(net)
print("checked")
"""


@pytest.mark.slow  # 6 s in a child: every default search test runs two batches on the two copies
def test_two_devices_run_their_own_copies_with_outputs_equal_to_serial_calls():
    code = CHILD.format(here=str(Path(__file__).parent), tests=str(REPO_ROOT / "tests"),
                        net=str(need_shared(*ZOO_NET)), options=SMALL_BUCKETS)
    assert run_in_child(code, with_devices=2).split()[-1] == "checked"
