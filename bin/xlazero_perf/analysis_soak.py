"""A long ``go infinite`` under ``RamLimitMb`` through the UCI pipe (``bin/perf/treemem --probe``).

Sets ``RamLimitMb``, takes the process's base RSS right after ``readyok``, runs ``go infinite``
and, once a second, logs (seconds, nodes, RSS MB, nodes/s) to a CSV; sends ``isready`` every
``isready_every`` seconds and records how long ``readyok`` takes; notes each ``info string`` (the
search's RamLimitMb message among them) with its time; at the end ``stop`` and the time to
``bestmove``, then ``quit``. Standard library only.
"""

from __future__ import annotations

import csv
import math
import statistics
import time
from dataclasses import dataclass, field

from xlazero_perf.uci_pipe import Engine

ISREADY_TARGET_MS = 50.0
STOP_TARGET_MS = 100.0
PLATEAU_S = 3.0
"""Nodes unchanged this long (seconds) while the search runs: the tree reached its limit."""


def rss_bytes(pid: int, field: str = "VmRSS") -> int:
    """The process's resident memory (``VmRSS``), or its peak so far (``VmHWM``), from /proc."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"no {field} in /proc/PID/status")


@dataclass
class Probe:
    limit_mb: int
    base_rss: int = 0
    hwm: int = 0
    """VmHWM before ``quit``: the peak RSS, between the once-a-second samples too."""
    rows: list[tuple[float, int, float, float]] = field(default_factory=list)
    """(seconds, nodes, RSS MB, nodes/s) once a second."""
    isready_ms: list[tuple[float, float]] = field(default_factory=list)
    """(seconds into the search it was sent, milliseconds to ``readyok``)."""
    isready_lost: int = 0
    """isready sent with no readyok before the next was due (counted, not waited for)."""
    info_strings: list[tuple[float, str]] = field(default_factory=list)
    stop_ms: float | None = None
    quit_ms: float | None = None
    bestmove: str = ""

    def limit_reached(self) -> tuple[float, int] | None:
        """(seconds, nodes) of the first sample of the final plateau, when the node count stayed
        there for PLATEAU_S or more to the end; None if it was still growing."""
        if not self.rows or self.rows[-1][1] == 0:
            return None
        last = self.rows[-1][1]
        i = len(self.rows) - 1
        while i > 0 and self.rows[i - 1][1] == last:
            i -= 1
        t = self.rows[i][0]
        return (t, last) if self.rows[-1][0] - t >= PLATEAU_S else None

    def longest_stall(self) -> tuple[float, float, float]:
        """(seconds, from, RSS rise MB) of the longest time the node count stood still before
        the final plateau (a pause in the search, e.g. an array grown)."""
        reached = self.limit_reached()
        end = reached[0] if reached else math.inf
        rows = [r for r in self.rows if r[0] < end and r[1] > 0]
        best = (0.0, 0.0, 0.0)
        i = 0
        while i < len(rows):
            j = i
            while j + 1 < len(rows) and rows[j + 1][1] == rows[i][1]:
                j += 1
            # the count stood still from just after sample i-1 to just before sample j+1
            if j > i:
                peak = max(r[2] for r in rows[i : j + 1])
                best = max(best, (rows[j][0] - rows[i][0], rows[i][0], peak - rows[i][2]))
            i = j + 1
        return best

    def summary(self) -> list[str]:
        base_mb = self.base_rss / 1e6
        peak = max((r[2] for r in self.rows), default=0.0)
        bound = self.limit_mb + base_mb
        hwm = self.hwm / 1e6
        top = max(peak, hwm)
        out = [
            f"RamLimitMb {self.limit_mb}: base RSS after readyok {base_mb:.0f} MB; peak RSS "
            f"{peak:.0f} MB sampled, {hwm:.0f} MB VmHWM, vs limit + base {bound:.0f} MB: "
            + ("within" if top <= bound else f"OVER by {top - bound:.0f} MB")
        ]
        falls = [(a[2] - b[2], b[0]) for a, b in zip(self.rows, self.rows[1:])]
        fall, at = max(falls, default=(0.0, 0.0))
        if fall > 20:
            out.append(
                f"largest RSS fall between samples: {fall:.0f} MB at {at:.0f} s (memory "
                "held for a moment, e.g. an array grown with both copies resident)"
            )
        if self.rows:
            t, n, r, _ = self.rows[-1]
            out.append(f"last sample: {t:.0f} s, {n} nodes, RSS {r:.0f} MB")
        reached = self.limit_reached()
        if reached:
            t, n = reached
            rss = next(r[2] for r in self.rows if r[0] >= t)
            out.append(
                f"limit reached at {t:.0f} s: {n} nodes, RSS {rss:.0f} MB "
                f"({(rss - base_mb) * 1e6 / max(n, 1):.0f} bytes a node above base)"
            )
        else:
            out.append("limit not reached (nodes still growing at the end)")
        ram = [(t, s) for t, s in self.info_strings if "ramlimit" in s.lower()]
        if ram:
            t, s = ram[0]
            when = "after stop" if self.rows and t > self.rows[-1][0] else "during the search"
            out.append(f"info string at {t:.1f} s ({when}): {s}")
        else:
            out.append("no RamLimitMb info string")
        stall, at, rise = self.longest_stall()
        if stall > 0:
            out.append(
                f"longest pause before the limit: nodes unchanged {stall:.0f}+ s from "
                f"{at:.0f} s, RSS +{rise:.0f} MB meanwhile"
            )
        if self.isready_ms:
            ms = [m for _, m in self.isready_ms]
            worst_at, worst = max(self.isready_ms, key=lambda x: x[1])
            out.append(
                f"isready x{len(ms)}: median {statistics.median(ms):.1f} ms, max {worst:.1f} ms "
                f"at {worst_at:.0f} s (target <= {ISREADY_TARGET_MS:.0f})"
                + (
                    f"; {self.isready_lost} unanswered within the interval"
                    if self.isready_lost
                    else ""
                )
            )
        if self.stop_ms is not None:
            out.append(
                f"stop -> bestmove {self.stop_ms:.0f} ms (target <= {STOP_TARGET_MS:.0f})"
                f": {self.bestmove}"
            )
        if self.quit_ms is not None:
            out.append(f"quit -> exit {self.quit_ms:.0f} ms")
        return out

    def write_csv(self, path: str) -> None:
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["seconds", "nodes", "rss_mb", "nodes_per_s"])
            for t, n, r, nps in self.rows:
                w.writerow([f"{t:.2f}", n, f"{r:.1f}", f"{nps:.0f}"])


def run(
    engine: Engine,
    limit_mb: int,
    seconds: float,
    isready_every: float = 2.0,
    log: str | None = None,
    echo: bool = False,
) -> Probe:
    """The probe on a started engine (see the module's docstring); ``echo``: print each row."""
    probe = Probe(limit_mb)
    engine.send("uci", f"setoption name RamLimitMb value {limit_mb}", "isready")
    engine.wait_for("readyok")
    probe.base_rss = rss_bytes(engine.proc.pid)
    start = engine.send("position startpos", "go infinite")
    nodes, last_t, last_n = 0, 0.0, 0
    pending: float | None = None  # isready sent at (monotonic), readyok not yet seen
    next_ready = start + isready_every
    try:
        while True:
            time.sleep(0.02)
            while not engine.lines.empty():
                t_line, line = engine.lines.get()
                if line.startswith("info string"):
                    probe.info_strings.append((t_line - start, line[len("info string ") :]))
                elif line.startswith("info") and " nodes " in line:
                    nodes = int(line.split(" nodes ")[1].split()[0])
                elif line == "readyok" and pending is not None:
                    probe.isready_ms.append((pending - start, 1000 * (t_line - pending)))
                    pending = None
                elif line == "" and engine.proc.poll() is not None:
                    raise RuntimeError(f"engine exited (code {engine.proc.returncode})")
            now = time.monotonic()
            elapsed = now - start
            if elapsed - last_t >= 1.0 or not probe.rows:
                rss = rss_bytes(engine.proc.pid) / 1e6
                nps = (nodes - last_n) / (elapsed - last_t) if elapsed > last_t else 0.0
                probe.rows.append((elapsed, nodes, rss, nps))
                if echo:
                    print(
                        f"{elapsed:7.1f} s {nodes:>11} nodes {rss:8.0f} MB {nps:9.0f} nodes/s",
                        flush=True,
                    )
                last_t, last_n = elapsed, nodes
            if elapsed >= seconds and (pending is None or elapsed >= seconds + 5):
                if pending is not None:
                    probe.isready_lost += 1
                break
            if now >= next_ready:
                if pending is not None:
                    probe.isready_lost += 1
                pending = engine.send("isready")
                next_ready = now + isready_every
    finally:
        if log:
            probe.write_csv(log)
    t = engine.send("stop")
    while True:
        t_line, line = engine.lines.get(timeout=60)
        if line.startswith("info string"):
            probe.info_strings.append((t_line - start, line[len("info string ") :]))
        elif line.startswith("bestmove"):
            probe.stop_ms, probe.bestmove = 1000 * (t_line - t), line
            break
        elif line == "" and engine.proc.poll() is not None:
            raise RuntimeError(f"engine exited (code {engine.proc.returncode}) before bestmove")
    if log:
        probe.write_csv(log)
    probe.hwm = rss_bytes(engine.proc.pid, "VmHWM")
    t = engine.send("quit")
    engine.proc.wait(timeout=120)
    probe.quit_ms = 1000 * (time.monotonic() - t)
    return probe
