"""``xlazero backendbench``: lc0's ``backendbench`` (src/tools/backendbench.cc).

The network alone: after two warm-up batches of ``--max-batch-size``, for each batch size from
``--start-batch-size`` to ``--max-batch-size`` in steps of ``--batch-step``, ``--batches`` batches
of that many copies of ``--fen``'s position, on ``--threads`` threads; one CSV row a size in
lc0's columns (``size, mean nps, mean ms, sdev, cv, max nps, median, min nps, first max,
first mean``), the header every 32 sizes (``--header-only-once``: once). The first batch of each
thread is not timed, as lc0's (it fills the device's queue).

bin/perf/backendbench, the project's backend comparison (data types, variants, onnxruntime
beside it), times the network as the engine calls it with :func:`engine_call` from here.
"""

from __future__ import annotations

import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import chess
import numpy as np

from engine.modes.flags import BOOL, INT, STRING, Flag, Mode, option_flag

UNSUPPORTED = {
    "clippy": "lc0's assistant that suggests a minibatch size from the rows; not here",
}
HEADER = "size, mean nps, mean ms,   sdev,     cv, max nps,  median, min nps, first max, first mean"


def mode() -> Mode:
    flags = (
        option_flag("PolicyTemperature"),
        option_flag("HistoryFill"),
        option_flag("WeightsFile"),
        option_flag("Backend"),
        option_flag("BackendOptions"),
        option_flag("NNCacheSize", 2000000),
        option_flag("Threads", 1, "Number of (CPU) worker threads to use.", min=1),
        Flag("batches", INT, 100, "Number of batches to run as a benchmark.", min=1, max=999999999),
        Flag("start-batch-size", INT, 1, "Start benchmark from this batch size.", min=1, max=1024),
        Flag("max-batch-size", INT, 256, "Maximum batch size to benchmark.", min=1, max=1024),
        Flag("batch-step", INT, 1, "Step of batch size in benchmark.", min=1, max=256),
        Flag("header-only-once", BOOL, False, "Print CSV header only once."),
        Flag("fen", STRING, chess.STARTING_FEN, "Benchmark initial position FEN."),
    )
    return Mode("backendbench", "Quick benchmark of backend only", flags, run, UNSUPPORTED)


def engine_call(network, planes: np.ndarray) -> Callable[[], object]:
    """The network called as the search calls it: lc0's packed planes for a network that
    takes them, else float planes."""
    if network.attributes().packed_input:
        from backend_xla.packed import pack_planes

        masks, values = pack_planes(planes)
        return lambda: network.evaluate_packed(masks, values)
    return lambda: network.evaluate(planes)


def run(values: dict[str, Any]) -> int:
    from engine.encoding import encode_planes
    from engine.modes.benchmark import load, option_values

    network, _ = load(option_values(values))
    board = chess.Board(values["fen"])
    planes = encode_planes(board, network.input_format, values["history-fill"])[None]
    threads, batches = values["threads"], values["batches"]
    start, top, step = values["start-batch-size"], values["max-batch-size"], values["batch-step"]
    warm = engine_call(network, np.repeat(planes, top, axis=0))
    _on_threads(threads, lambda tid: (warm(), warm()))
    for size in range(start, top + 1, step):
        call = engine_call(network, np.repeat(planes, size, axis=0))
        times, firsts = _timed(call, threads, batches)
        if (
            values["header-only-once"]
            and size == start
            or (not values["header-only-once"] and (size - start) // step % 32 == 0)
        ):
            print(HEADER)
        print(_row(size, times, firsts, threads), flush=True)
    return 0


def _on_threads(threads: int, fn: Callable[[int], object]) -> None:
    workers = [threading.Thread(target=fn, args=(t,)) for t in range(1, threads)]
    for w in workers:
        w.start()
    fn(0)
    for w in workers:
        w.join()


def _timed(
    call: Callable[[], object], threads: int, batches: int
) -> tuple[list[float], list[float]]:
    """lc0's loop: ``batches`` calls shared by the threads; each thread's gaps between its
    calls' ends, divided by the threads; and the times at which each thread's first call ended."""
    left = [batches]
    lock = threading.Lock()
    ends: list[list[float]] = [[] for _ in range(threads)]
    firsts = [time.monotonic()]

    def compute(tid: int) -> None:
        while True:
            with lock:
                if left[0] <= 0:
                    return
                left[0] -= 1
            call()
            ends[tid].append(time.monotonic())
            if len(ends[tid]) == 1:
                with lock:
                    firsts.append(ends[tid][0])

    _on_threads(threads, compute)
    gaps = [(e[j] - e[j - 1]) / threads for e in ends for j in range(1, len(e))]
    return gaps, firsts


def _row(size: int, times: list[float], firsts: list[float], threads: int) -> str:
    if not times:
        return f"{size:4d}, (fewer than two batches a thread: nothing timed)"
    total, mean = sum(times), statistics.fmean(times)
    sdev = statistics.stdev(times) if len(times) > 1 else 0.0
    ordered = sorted(times)
    firsts = sorted(firsts)
    first_max = max((b - a) * 1000 for a, b in zip(firsts, firsts[1:]))
    first_mean = (firsts[-1] - firsts[0]) * 1000 / threads
    return (f"{size:4d},{size * len(times) / total:9.0f},{mean * 1000:8.4g},{sdev * 1000:7.4f},"
            f"{sdev / mean:7.4f},{size / ordered[0]:8.0f},{size / statistics.median(ordered):8.0f},"
            f"{size / ordered[-1]:8.0f},{first_max:10.4f},{first_mean:11.4f}")  # fmt: skip
