"""An lc0 (or any UCI engine) subprocess driven over UCI, for the scripts in bin/ that compare
with lc0 side by side (bin/perf/bench). Standard library only."""

from __future__ import annotations

import collections
import os
import queue
import re
import subprocess
import threading
import time

LC0_TIMEOUT_S = 900.0  # for any one reply (a search included)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # lc0's coloured banner


class Lc0Error(RuntimeError):
    """lc0 did not start, or did not answer as UCI says."""


def _proc_cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads) from /proc; None without /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Lc0:
    """An lc0 (or any UCI engine) subprocess, driven over UCI for fixed-node searches."""

    def __init__(
        self,
        binary: str,
        backend: str,
        weights: str | None,
        options: dict[str, str],
        timeout: float = LC0_TIMEOUT_S,
    ):
        self.binary, self.timeout = binary, timeout
        argv = [binary, f"--backend={backend}"] + ([f"--weights={weights}"] if weights else [])
        self.argv = argv
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                bufsize=1,
            )
        except OSError as exc:
            raise Lc0Error(f"cannot start lc0 {binary!r}: {exc}") from None
        assert self.proc.stdin and self.proc.stdout and self.proc.stderr  # pipes; Popen: Optional
        self._in, self._out, self._err = self.proc.stdin, self.proc.stdout, self.proc.stderr
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        threading.Thread(target=self._pump_stdout, daemon=True).start()
        threading.Thread(target=self._pump_stderr, daemon=True).start()
        try:
            self.send("uci")
            self.wait_for("uciok")
            for name, value in options.items():
                self.send(f"setoption name {name} value {value}")
            self.ready()
        except Lc0Error:
            self.close()
            raise

    def _pump_stdout(self) -> None:
        for line in self._out:
            self.lines.put(line.rstrip("\n"))
        self.lines.put(None)

    def _pump_stderr(self) -> None:
        for line in self._err:
            self.stderr.append(ANSI_ESCAPE.sub("", line.rstrip("\n")))

    def _fail(self, why: str) -> Lc0Error:
        time.sleep(0.2)  # let the stderr reader catch up with a dying process
        rc = self.proc.poll()
        err = "\n".join(self.stderr).strip("\n")
        return Lc0Error(
            f"lc0 {self.binary!r} ({' '.join(self.argv[1:])}): {why}"
            + (f" (exit status {rc})" if rc is not None else "")
            + (f"; its stderr:\n{err}" if err else "; nothing on its stderr")
        )

    def send(self, command: str) -> None:
        try:
            self._in.write(command + "\n")
            self._in.flush()
        except OSError:
            raise self._fail(f"exited before {command.split()[0]!r}") from None

    def wait_for(self, token: str) -> list[str]:
        """Lines up to and including the first whose first word is ``token``; an ``error`` line,
        the end of its output or a timeout raise Lc0Error."""
        seen = []
        deadline = time.monotonic() + self.timeout
        while True:
            try:
                line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise self._fail(f"no {token!r} within {self.timeout:.0f}s") from None
            if line is None:
                raise self._fail(f"exited while we waited for {token!r}")
            words = line.split()
            if words[:1] == ["error"] or line.lower().startswith("unknown option"):
                raise self._fail(f"said {line!r} while we waited for {token!r}")
            seen.append(line)
            if words[:1] == [token]:
                return seen

    def ready(self) -> None:
        self.send("isready")
        self.wait_for("readyok")

    def search(self, fen: str, nodes: int) -> tuple[int, float, float | None, str]:
        """ucinewgame + position + ``go nodes``: (nodes searched, wall seconds, process CPU seconds
        or None, bestmove)."""
        self.send("ucinewgame")
        self.send(f"position fen {fen}")
        self.ready()
        cpu = _proc_cpu_seconds(self.proc.pid)
        t = time.monotonic()
        self.send(f"go nodes {nodes}")
        lines = self.wait_for("bestmove")
        dt = time.monotonic() - t
        cpu_end = _proc_cpu_seconds(self.proc.pid)
        searched = 0
        for line in lines:
            words = line.split()
            if words[:1] == ["info"] and "nodes" in words[:-1]:
                searched = int(words[words.index("nodes") + 1])
        bestmove = lines[-1].split()[1] if len(lines[-1].split()) > 1 else "(none)"
        return (
            searched,
            dt,
            (cpu_end - cpu if cpu is not None and cpu_end is not None else None),
            bestmove,
        )

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._in.write("quit\n")
                self._in.flush()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
