"""``bin/perf/bench``'s measuring parts: xlazero's searches to a node count, each engine's figures,
the search's parts timed (``--breakdown``) and a simulated accelerator's latency
(``--latency-ms``)."""

from __future__ import annotations

import collections
import gc
import statistics
import time

import chess

from engine.search import Limit, Search, SearchParams
from engine.search.timeline import Timeline

from .trace import TraceWriter


class Runs:
    """Per position, one engine's searches: nodes, wall seconds, CPU seconds."""

    def __init__(self, positions: int):
        self.nodes: list[list[int]] = [[] for _ in range(positions)]
        self.secs: list[list[float]] = [[] for _ in range(positions)]
        self.cpu: list[list[float | None]] = [[] for _ in range(positions)]
        self.process_cpu: list[list[float | None]] = [[] for _ in range(positions)]
        self.best = [""] * positions

    def add(
        self,
        i: int,
        nodes: int,
        secs: float,
        cpu: float | None,
        best: str,
        process_cpu: float | None = None,
    ) -> None:
        self.nodes[i].append(nodes)
        self.secs[i].append(secs)
        self.cpu[i].append(cpu)
        self.process_cpu[i].append(process_cpu)
        self.best[i] = best

    def rates(self, i: int) -> list[float]:
        return [n / s for n, s in zip(self.nodes[i], self.secs[i])]

    def cpu_us(self, i: int, process: bool = False) -> float | None:
        cpus = self.process_cpu[i] if process else self.cpu[i]
        per = [c / max(n, 1) * 1e6 for c, n in zip(cpus, self.nodes[i]) if c is not None]
        return statistics.median(per) if per else None

    def round_rate(self, r: int) -> float:
        return sum(n[r] for n in self.nodes) / sum(s[r] for s in self.secs)

    def totals(self) -> tuple[int, float]:
        return sum(map(sum, self.nodes)), sum(map(sum, self.secs))

    def summary(self, repeats: int) -> dict:
        nodes, secs = self.totals()
        return {
            "nodes": nodes,
            "seconds": secs,
            "nodes_per_s": nodes / secs,
            "median_round_nodes_per_s": statistics.median(
                self.round_rate(r) for r in range(repeats)
            ),
        }


class Breakdown:
    """Search-thread CPU time of the search's parts, by wrapping their functions (each wrapper
    adds ~0.5 us a call). Inclusive times: ``gather`` contains the selection-side rows."""

    PARTS = (
        ("SearchWorker", "gather", "gather (Python side, incl. the rows below)"),
        ("worker", "gather_minibatch", "  compiled: select, leaves, legal moves, planes"),
        ("SearchWorker", "root_filter", "  root filter (smart pruning's hint)"),
        ("SearchWorker", "probe", "  Syzygy probes of the flagged leaves"),
        ("SearchWorker", "process", "expand + backup of a batch (Python side)"),
        ("worker", "expand_and_backup", "  compiled: edges, backup, cache"),
        ("SearchRun", "_summary", "stoppers' root summary"),
        ("SearchWorker", "evaluate", "network call handed to the worker"),
    )

    def __init__(self) -> None:
        from engine.search import run, worker

        modules = {
            "SearchRun": run.SearchRun,
            "SearchWorker": worker.SearchWorker,
            "worker": worker,
        }
        self.nodes = 0
        self.ns: collections.Counter[str] = collections.Counter()
        self.calls: collections.Counter[str] = collections.Counter()
        self._saved = []
        for module_name, name, label in self.PARTS:
            module = modules[module_name]
            original = getattr(module, name)
            self._saved.append((module, name, original))
            setattr(module, name, self._wrap(original, label))

    def _wrap(self, fn, label):
        ns, calls, clock = self.ns, self.calls, time.thread_time_ns

        def timed(*a, **k):
            t = clock()
            try:
                return fn(*a, **k)
            finally:
                ns[label] += clock() - t
                calls[label] += 1

        return timed

    def restore(self) -> None:
        for module, name, original in self._saved:
            setattr(module, name, original)

    def print(self) -> dict[str, float]:
        nodes = max(self.nodes, 1)
        print(f"Breakdown (search-thread CPU us a node over {self.nodes} nodes; calls a node):")
        out = {}
        for _, _, label in self.PARTS:
            us = self.ns[label] / nodes / 1000
            out[label.strip()] = us
            print(f"  {label:58s} {us:7.1f}   {self.calls[label] / nodes:5.2f}")
        return out


class Delayed:
    """A network whose every call takes at least ``delay`` seconds more (a simulated
    accelerator's latency; the thread sleeps, as it would wait for a device)."""

    def __init__(self, network, delay: float) -> None:
        self._network = network
        self._delay = delay
        self.input_format = network.input_format
        self.has_wdl = network.has_wdl
        self.has_mlh = network.has_mlh

    def attributes(self):
        return self._network.attributes()

    def evaluate(self, planes):
        out = self._network.evaluate(planes)
        time.sleep(self._delay)
        return out

    def evaluate_packed(self, masks, values):
        out = self._network.evaluate_packed(masks, values)
        time.sleep(self._delay)
        return out


class Searches:
    """xlazero's measured searches, each with a fresh Search (its ucinewgame) to ``nodes``,
    into ``runs``; optionally timed by parts (``parts``) and traced (``trace``)."""

    def __init__(
        self,
        network,
        params: SearchParams,
        nodes: int,
        positions: int,
        parts: Breakdown | None = None,
        trace: TraceWriter | None = None,
    ) -> None:
        self.network, self.params, self.nodes = network, params, nodes
        self.parts, self.trace = parts, trace
        self.runs = Runs(positions)
        gc.freeze()  # as the engine after loading its network (engine/controller.py)

    def run(self, i: int, fen: str, r: int) -> None:
        """Position ``i`` (``fen``) in round ``r``."""
        search = Search(self.network, self.params)
        search.set_position(chess.Board(fen))
        if self.trace is not None:
            search.timeline = Timeline()
        t = time.monotonic()
        cpu, process_cpu = time.thread_time(), time.process_time()
        result = search.run(Limit(nodes=self.nodes))
        dt = time.monotonic() - t
        # The search runs in this thread and the network in a worker thread, so this thread's
        # CPU time is the search's own cost (robust to other load on the machine).
        cpu, process_cpu = time.thread_time() - cpu, time.process_time() - process_cpu
        if self.parts is not None:
            self.parts.nodes += result.nodes
        if self.trace is not None and search.timeline is not None:
            self.trace.add(f"position {i + 1} round {r + 1}", search.timeline.batches())
        search.close()
        self.runs.add(i, result.nodes, dt, cpu, str(result.bestmove), process_cpu)
