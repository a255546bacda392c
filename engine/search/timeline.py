"""A search's timeline, batch by batch: when each minibatch was gathered, evaluated and backed
up. Recorded only when a caller sets ``Search.timeline`` (``bin/perf/bench --trace``), to show
whether the search and the network overlap."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass

PHASES = ("gather", "device", "backup")
"""A batch's phases in order: gathered by the search thread, evaluated by a worker (the
device's time, waits for a free device included), backed up by the search thread."""


@dataclass(frozen=True)
class BatchTimes:
    """One minibatch: its sequence number in the search, its rows (requests and prefetched
    positions), and (start, end) of each phase in seconds from the timeline's start; a phase
    that did not happen (an abandoned batch's backup) is None."""

    batch: int
    rows: int
    gather: tuple[float, float] | None
    device: tuple[float, float] | None
    backup: tuple[float, float] | None


class Timeline:
    """Phase times recorded by the search thread and the evaluation workers."""

    def __init__(self) -> None:
        self.origin = time.perf_counter()
        self._lock = threading.Lock()
        self._rows: dict[int, int] = {}
        self._spans: dict[tuple[int, str], tuple[float, float]] = {}

    @staticmethod
    def now() -> float:
        return time.perf_counter()

    def add(self, batch: int, phase: str, start: float, end: float, rows: int = 0) -> None:
        """Record ``phase`` of ``batch`` (perf_counter readings); ``rows`` when known."""
        with self._lock:
            self._spans[(batch, phase)] = (start - self.origin, end - self.origin)
            if rows:
                self._rows[batch] = rows

    def batches(self) -> list[BatchTimes]:
        with self._lock:
            seqs = sorted({b for b, _ in self._spans})
            return [
                BatchTimes(
                    b,
                    self._rows.get(b, 0),
                    *(self._spans.get((b, phase)) for phase in PHASES),
                )
                for b in seqs
            ]


def busy_seconds(spans: list[tuple[float, float]]) -> float:
    """The time covered by the union of ``spans``."""
    total, end = 0.0, float("-inf")
    for a, b in sorted(spans):
        if b <= end:
            continue
        total += b - max(a, end)
        end = b
    return total


def overlap_seconds(a: list[tuple[float, float]], b: list[tuple[float, float]]) -> float:
    """The time during which some span of ``a`` and some span of ``b`` both run."""
    return busy_seconds(a) + busy_seconds(b) - busy_seconds(a + b)
