"""What the three kinds of ``bin/check/soak`` share: the resumable JSON-lines log, the time limit, the
summary, and an engine process driven through its UCI pipe (raw bytes in, lines out, RSS)."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent.parent
ENGINE = ROOT / "bin" / "xlazero"

OK_OUTCOMES = frozenset({"ok", "ok_loaded", "ok_refused", "skipped", "opponent_abnormal"})
"""Outcomes that are not failures; every other outcome counts as one."""


class Deadline:
    """The command's own time limit (``--max-minutes``)."""

    def __init__(self, minutes: float) -> None:
        self.end = time.monotonic() + minutes * 60.0

    def left(self) -> float:
        return self.end - time.monotonic()

    def passed(self) -> bool:
        return self.left() <= 0


class CaseLog:
    """One JSON line a case: ``{"kind", "seed", "index", "outcome", ...}``. A case already in the
    log (same kind, seed and index) is done: a rerun with the same log skips it."""

    def __init__(self, path: Path, kind: str, seed: int) -> None:
        self.path, self.kind, self.seed = path, kind, seed
        self.records: list[dict[str, Any]] = []
        if path.exists():
            for line in path.read_text(encoding="utf-8").splitlines():
                try:
                    rec = json.loads(line)
                except ValueError:  # a line cut by a kill: that case runs again
                    continue
                if rec.get("kind") == kind and rec.get("seed") == seed:
                    self.records.append(rec)
        self.done = {rec["index"] for rec in self.records if "index" in rec}

    def add(self, index: int, **fields: Any) -> dict[str, Any]:
        rec = {"kind": self.kind, "seed": self.seed, "index": index, **fields}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(rec, default=str) + "\n")
        self.records.append(rec)
        self.done.add(index)
        return rec


def run_cases(
    log: CaseLog,
    indices: Iterable[int],
    deadline: Deadline,
    run_one: Callable[[int], dict[str, Any]],
    progress: Callable[[str], None] = print,
) -> bool:
    """Run the cases not yet in the log, in order, until the deadline; True if all are done."""
    for index in indices:
        if index in log.done:
            continue
        if deadline.passed():
            progress("time limit reached: rerun the same command (same --log) to resume")
            return False
        started = time.monotonic()
        fields = run_one(index)
        fields.setdefault("s", round(time.monotonic() - started, 3))
        rec = log.add(index, **fields)
        if rec["outcome"] not in OK_OUTCOMES:
            progress(f"FAIL {log.kind} case {index}: {json.dumps(rec, default=str)[:600]}")
    return True


def summarize(log: CaseLog, wanted: int, complete: bool, out: Callable[[str], None] = print) -> int:
    """Print counts of each outcome (this log, this kind and seed); the exit code: 1 if any case
    failed, else 0."""
    counts = Counter(rec["outcome"] for rec in log.records)
    failures = sum(n for outcome, n in counts.items() if outcome not in OK_OUTCOMES)
    extra: Counter[str] = Counter()
    for rec in log.records:
        for key, value in rec.get("counts", {}).items():
            extra[key] += value
    out(f"soak {log.kind} seed {log.seed}: {len(log.done)} of {wanted} cases done ({log.path})")
    for outcome, n in sorted(counts.items()):
        mark = "" if outcome in OK_OUTCOMES else "   <- failure"
        out(f"  {outcome:<24} {n:6d}{mark}")
    for key, value in sorted(extra.items()):
        out(f"  [{key}] {value}")
    if not complete:
        out("  incomplete: the time limit ended the run; rerun with the same --log to resume")
    out(f"  failures: {failures}")
    return 1 if failures else 0


def rss_kb(pid: int, field: str = "VmRSS") -> int:
    """A memory figure of a process in kB from /proc (VmRSS, VmHWM: peak); 0 when gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except (OSError, ValueError):
        pass
    return 0


def reset_peak_rss(pid: int) -> None:
    """Start VmHWM again from the current RSS (Linux >= 4.0: ``5`` to clear_refs)."""
    try:
        Path(f"/proc/{pid}/clear_refs").write_text("5")
    except OSError:
        pass


class Pipe:
    """An engine process: bytes written to its stdin, its output lines read by a thread."""

    def __init__(self, command: list[str], cwd: Path = ROOT) -> None:
        self.command = command
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
        )
        assert self.proc.stdin and self.proc.stdout
        self._in, self._out = self.proc.stdin, self.proc.stdout
        self.lines: queue.Queue[str | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for raw in self._out:
            self.lines.put(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
        self.lines.put(None)  # end of output

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, *lines: str | bytes) -> bool:
        """Write lines (str as UTF-8); False if the pipe is closed (the engine died)."""
        data = b"".join((ln.encode() if isinstance(ln, str) else ln) + b"\n" for ln in lines)
        try:
            self._in.write(data)
            self._in.flush()
            return True
        except (BrokenPipeError, OSError, ValueError):
            return False

    def read_until(
        self, done: Callable[[str], bool], timeout: float, seen: list[str] | None = None
    ) -> tuple[str, list[str]]:
        """Lines up to the first for which ``done`` is true: ("ok", lines), ("timeout", lines) or
        ("eof", lines) if the engine's output ended first."""
        got = [] if seen is None else seen
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                return "timeout", got
            if line is None:
                self.lines.put(None)  # stays at the end for later readers
                return "eof", got
            got.append(line)
            if done(line):
                return "ok", got

    def quit(self, timeout: float = 1.0) -> float | None:
        """Send quit: seconds until the process exited, or None (killed after ``timeout``)."""
        t0 = time.monotonic()
        self.send("quit")
        try:
            self._in.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout)
            return time.monotonic() - t0
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass


def engine_command(extra: Iterable[str] = ()) -> list[str]:
    return [str(ENGINE), *extra]


def env_flag_minutes(value: float, cap: float = 45.0) -> float:
    """``--max-minutes``: every job ends within ``cap`` minutes."""
    if not 0 < value <= cap:
        raise SystemExit(f"soak: --max-minutes must be in (0, {cap:g}], got {value:g}")
    return value


def short(text: str, n: int = 300) -> str:
    return text if len(text) <= n else text[:n] + f"...({len(text)} chars)"
