"""Network calls at once on one device (backend option ``device_calls``, auto: two on an
accelerator, one a device on a CPU): the search's two batches in flight then overlap one call's
host work with the other's kernels, and search the same."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from xla_testutil import need_shared, root_visits

import backend_xla
from backend_xla.buckets import CONCURRENT_CALLS, device_calls
from backend_xla.errors import OptionError
from engine.search import SearchParams

OPTIONS = "batch_buckets=16,cache_dir=none,background_compile=0,device=0"
"""One CPU device, one batch size."""


def test_auto_is_two_calls_on_one_accelerator_and_one_a_cpu_device():
    gpu, cpu = SimpleNamespace(platform="gpu"), SimpleNamespace(platform="cpu")
    assert device_calls("auto", [gpu]) == CONCURRENT_CALLS == 2
    assert device_calls("auto", [cpu]) == 1 and device_calls("auto", [cpu] * 16) == 2
    assert device_calls(1, [gpu]) == 1 and device_calls(3, [cpu]) == 3


def test_two_calls_on_one_device_search_as_one():
    """Two calls at once on one device (as auto on a GPU): the programs are not copied, the
    network says two calls; one search thread gets every root visit as with one call at a time,
    and two search threads, whose calls then run at once, reach the node count. (Two threads'
    searches differ by their timing, as lc0's; that concurrent calls answer as one at a time is
    test_gpu.py's check, run on the CPU too.)"""
    path = need_shared("maia", "maia-1100.onnx")
    nets = [backend_xla.load_network(path, f"{OPTIONS},device_calls={k}") for k in (2, 1)]
    assert [n.attributes().concurrency for n in nets] == [2, 1]
    assert nets[0].buckets.executable(16).copies == 1
    assert "one device (2 calls at once)" in nets[0].describe()[0]
    one = SearchParams(smart_pruning_factor=0.0, minibatch_size=16, threads=1)
    visits = [root_visits(net, one, 400) for net in nets]
    # Each search ends with its threads' iterations that reach 400 (lc0's): a minibatch of 16
    # and its out-of-order backups past it at most, a thread.
    assert 399 <= sum(visits[0]) <= 399 + 16 + 38 and visits[0] == visits[1]
    two = SearchParams(smart_pruning_factor=0.0, minibatch_size=16, threads=2)
    assert 399 <= sum(root_visits(nets[0], two, 400)) <= 399 + 2 * (16 + 38)


def test_more_calls_than_the_search_keeps_in_flight_are_refused():
    with pytest.raises(OptionError, match=r"backend option device_calls: expected auto or an integer in \[1, 4\], got 5"):
        backend_xla.load_network("unused.onnx", "device_calls=5")
