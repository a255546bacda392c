"""The option tests' harness (tests/engine/option_harness.py): its network's pace."""

from __future__ import annotations

import time

import numpy as np

from engine.backend import INPUT_PLANES
from option_harness import NETWORK_PACE, _load


def test_network_pace_is_5_ms_a_batch():
    """The effects backend's ``delay`` is in seconds (the random backend's is in milliseconds):
    NETWORK_PACE makes each batch take 5 ms, not 5 us (no pace) nor 5 s (a clock's search
    would wait its whole budget on one batch). A sleep is never shorter than asked; the upper
    bound is loose for a loaded machine."""
    network = _load("ignored", NETWORK_PACE)  # compiles the outputs' functions (no delay)
    planes = np.zeros((4, INPUT_PLANES, 8, 8), np.float32)
    calls = 4
    start = time.perf_counter()
    for _ in range(calls):
        network.evaluate(planes)
    each = (time.perf_counter() - start) / calls
    assert 0.005 <= each < 0.1, f"expected about 5 ms a batch, got {each * 1000:.3f} ms"
