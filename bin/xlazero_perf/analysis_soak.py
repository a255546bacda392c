"""A long ``go infinite`` under ``RamLimitMb`` through the UCI pipe (``bin/perf/treemem --probe``):
the base RSS right after ``readyok``, then (seconds, nodes, RSS MB, nodes/s) once a second (a
CSV), ``isready`` every few seconds timed to its ``readyok``, each ``info string`` with its time,
and at the end ``stop`` (the time to ``bestmove``) and ``quit``."""

from __future__ import annotations

import csv
import statistics
import time
from dataclasses import dataclass, field

from xlazero_perf.soak import rss_bytes
from xlazero_perf.uci_pipe import Engine

PLATEAU_S = 3.0  # nodes unchanged this long (seconds) to the end: the tree reached its limit


@dataclass
class Probe:
    """``rows``: (seconds, nodes, RSS MB, nodes/s); ``isready_ms``: (sent at s, ms to readyok);
    ``info_strings``: (at s, text); ``hwm_mb``: VmHWM before quit (the peak, samples or not)."""

    limit_mb: int
    rows: list[tuple[float, int, float, float]] = field(default_factory=list)
    isready_ms: list[tuple[float, float]] = field(default_factory=list)
    info_strings: list[tuple[float, str]] = field(default_factory=list)
    base_mb, hwm_mb, stop_ms, quit_ms, isready_sent, bestmove = 0.0, 0.0, 0.0, 0.0, 0, ""

    def summary(self) -> list[str]:
        (t, n, rss, _), bound = self.rows[-1], self.limit_mb + self.base_mb
        peak = max(r[2] for r in self.rows)
        top = max(peak, self.hwm_mb)
        at_n = next(r for r in self.rows if r[1] == n)  # the first sample with the last count
        fall, fall_at = max(
            [(a[2] - b[2], b[0]) for a, b in zip(self.rows, self.rows[1:])] or [(0, 0)]
        )
        ram = [(at, s) for at, s in self.info_strings if "ramlimit" in s.lower()] + [(0.0, "")]
        when = "after stop" if ram[0][0] > t else "during the search"
        worst_at, worst = max(self.isready_ms or [(0.0, 0.0)], key=lambda x: x[1])
        out = [
            f"RamLimitMb {self.limit_mb}: base RSS after readyok {self.base_mb:.0f} MB; peak RSS "
            f"{peak:.0f} MB sampled, {self.hwm_mb:.0f} MB VmHWM, vs limit + base {bound:.0f} MB: "
            + ("within" if top <= bound else f"OVER by {top - bound:.0f} MB"),
            f"last sample: {t:.0f} s, {n} nodes, RSS {rss:.0f} MB",
            f"limit reached at {at_n[0]:.0f} s: {n} nodes, RSS {at_n[2]:.0f} MB "
            f"({(at_n[2] - self.base_mb) * 1e6 / max(n, 1):.0f} bytes a node above base)"
            if n and t - at_n[0] >= PLATEAU_S
            else "limit not reached (nodes still growing at the end)",
            f"info string at {ram[0][0]:.1f} s ({when}): {ram[0][1]}"
            if ram[0][1]
            else "no RamLimitMb info string",
            f"isready x{self.isready_sent}: median "
            f"{statistics.median([m for _, m in self.isready_ms] or [0]):.1f} ms, max {worst:.1f} "
            f"ms at {worst_at:.0f} s (target <= 50); "
            f"{self.isready_sent - len(self.isready_ms)} unanswered within the interval",
            f"stop -> bestmove {self.stop_ms:.0f} ms (target <= 100): {self.bestmove}",
            f"quit -> exit {self.quit_ms:.0f} ms",
        ]
        if fall > 20:  # memory held for a moment, e.g. an array grown with both copies resident
            out.insert(1, f"largest RSS fall between samples: {fall:.0f} MB at {fall_at:.0f} s")
        return out


def run(
    engine: Engine, limit_mb: int, seconds: float, every: float = 2.0, log: str | None = None
) -> Probe:
    """The probe on a started engine, ``isready`` each ``every`` s; ``log``: the CSV's path."""
    probe = Probe(limit_mb)
    engine.send("uci", f"setoption name RamLimitMb value {limit_mb}", "isready")
    engine.wait_for("readyok")
    probe.base_mb = rss_bytes(engine.proc.pid) / 1e6
    start = engine.send("position startpos", "go infinite")
    nodes, next_ready, pending, stop = 0, start + every, 0.0, 0.0  # isready and stop sent at
    try:
        while not probe.bestmove:
            time.sleep(0.02)
            while not engine.lines.empty():
                t_line, line = engine.lines.get()
                if line.startswith("info string"):
                    probe.info_strings.append((t_line - start, line[len("info string ") :]))
                elif line.startswith("info") and " nodes " in line:
                    nodes = int(line.split(" nodes ")[1].split()[0])
                elif line == "readyok" and pending:
                    probe.isready_ms.append((pending - start, 1000 * (t_line - pending)))
                    pending = 0.0
                elif line.startswith("bestmove") and stop:
                    probe.stop_ms, probe.bestmove = 1000 * (t_line - stop), line
                elif line == "" and engine.closed.is_set():
                    raise RuntimeError(f"engine exited (code {engine.proc.wait(timeout=5)})")
            now = time.monotonic()
            if stop and now - stop > 60:
                raise RuntimeError("no bestmove within 60 s of stop")
            if not stop and (not probe.rows or now - start - probe.rows[-1][0] >= 1.0):
                t0, n0 = probe.rows[-1][:2] if probe.rows else (0.0, 0)
                rss = rss_bytes(engine.proc.pid) / 1e6
                probe.rows.append((now - start, nodes, rss, (nodes - n0) / (now - start - t0)))
            if not stop and now - start >= seconds and (not pending or now - start >= seconds + 5):
                pending, stop = 0.0, engine.send("stop")
            elif not stop and now >= next_ready:
                pending, next_ready = engine.send("isready"), now + every
                probe.isready_sent += 1
    finally:
        if log:
            rows = [(f"{t:.2f}", n, f"{r:.1f}", f"{v:.0f}") for t, n, r, v in probe.rows]
            with open(log, "w", newline="") as f:
                csv.writer(f).writerows([("seconds", "nodes", "rss_mb", "nodes_per_s"), *rows])
    probe.hwm_mb = rss_bytes(engine.proc.pid, "VmHWM") / 1e6
    t = engine.send("quit")
    engine.proc.wait(timeout=120)
    probe.quit_ms = 1000 * (time.monotonic() - t)
    return probe
