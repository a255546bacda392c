"""The one UCI driver of the tools: an engine process (ours, lc0, Stockfish) driven through its UCI
pipe, each output line time-stamped by a reader thread, its stderr kept for the error that says
why it stopped answering."""

from __future__ import annotations

import collections
import os
import queue
import re
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
REPLY_TIMEOUT_S = 900.0  # for any one reply (a search included)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # lc0's coloured banner


class EngineError(RuntimeError):
    """The engine did not start, or did not answer as UCI says."""


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads) from /proc; None without /proc."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


class Engine:
    """A UCI engine process (started in ``cwd``, the repository by default: None keeps ours).
    ``stderr=subprocess.PIPE`` keeps its last 40 lines for errors."""

    def __init__(
        self,
        command: list[str],
        env: dict[str, str] | None = None,
        stderr: int | None = None,
        cwd: Path | None = ROOT,
    ) -> None:
        self.command, self.started = command, time.monotonic()
        try:
            self.proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=stderr, text=True, bufsize=1, env=env, cwd=cwd)  # fmt: skip
        except OSError as exc:
            raise EngineError(
                f"cannot start {Path(command[0]).name} {command[0]!r}: {exc}"
            ) from None
        assert self.proc.stdin and self.proc.stdout  # pipes; Popen: Optional
        self._in, self._out = self.proc.stdin, self.proc.stdout
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        self.stderr: collections.deque[str] = collections.deque(maxlen=40)
        self.closed = threading.Event()
        """Its output ended (set before the last, empty, line is queued). Not whether it has
        exited: a process closes its output as it exits, before it can be waited for, so an
        end of output read while ``poll()`` still says running was taken for an empty line and
        the wait went on to its timeout (a bench test's 300 s, once in a suite run)."""
        threading.Thread(target=self._read, daemon=True).start()
        if stderr == subprocess.PIPE:
            threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read(self) -> None:
        for line in self._out:
            self.lines.put((time.monotonic(), line.strip()))
        self.closed.set()
        self.lines.put((time.monotonic(), ""))

    def _read_stderr(self) -> None:
        assert self.proc.stderr
        for line in self.proc.stderr:
            self.stderr.append(ANSI_ESCAPE.sub("", line.rstrip("\n")))

    def send(self, *lines: str) -> float:
        """Write lines; returns the time just *before* writing (read after the write, it could
        come after the engine's answer: this thread may wait up to Python's 5 ms GIL switch
        interval while the reader thread stamps that answer)."""
        t = time.monotonic()
        try:
            self._in.write("".join(line + "\n" for line in lines))
            self._in.flush()
        except OSError:
            raise self.error(f"exited before {lines[0].split()[0]!r}") from None
        return t

    def wait_for(self, prefix: str, timeout: float = 120.0) -> float:
        """Time stamp of the next line starting with ``prefix``."""
        deadline = time.monotonic() + timeout
        while True:
            t, line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            if line.startswith(prefix):
                return t
            if line == "" and self.closed.is_set():
                raise RuntimeError(f"engine exited (code {self._exit_code()}) before {prefix!r}")

    def read_until(self, token: str, timeout: float = REPLY_TIMEOUT_S) -> list[str]:
        """Lines up to and including the first whose first word is ``token``; an ``error`` line,
        the end of its output or a timeout raise EngineError."""
        seen: list[str] = []
        deadline = time.monotonic() + timeout
        while True:
            try:
                _, line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                raise self.error(f"no {token!r} within {timeout:.0f}s") from None
            if line == "" and self.closed.is_set():
                raise self.error(f"exited while we waited for {token!r}")
            words = line.split()
            if words[:1] == ["error"] or line.lower().startswith("unknown option"):
                raise self.error(f"said {line!r} while we waited for {token!r}")
            seen.append(line)
            if words[:1] == [token]:
                return seen

    def _exit_code(self) -> int | None:
        """The exit status of a process whose output ended (it exits now: a second at most)."""
        try:
            return self.proc.wait(timeout=1.0)
        except subprocess.TimeoutExpired:
            return None

    def error(self, why: str) -> EngineError:
        time.sleep(0.2)  # let the stderr reader catch up with a dying process
        rc = self._exit_code() if self.closed.is_set() else self.proc.poll()
        err = "\n".join(self.stderr).strip("\n")
        return EngineError(
            f"{self.command[0]!r} ({' '.join(self.command[1:])}): {why}"
            + (f" (exit status {rc})" if rc is not None else "")
            + (f"; its stderr:\n{err}" if err else "; nothing on its stderr")
        )

    def start_uci(self, options: dict[str, str]) -> Engine:
        """``uci``, the options, ``isready``: an engine ready to search."""
        try:
            self.send("uci")
            self.read_until("uciok")
            for name, value in options.items():
                self.send(f"setoption name {name} value {value}")
            self.send("isready")
            self.read_until("readyok")
        except EngineError:
            self.quit()
            raise
        return self

    def search(self, fen: str, nodes: int) -> tuple[int, float, float | None, str]:
        """ucinewgame + position + ``go nodes``: (nodes searched, wall seconds, process CPU seconds
        or None, bestmove)."""
        self.send("ucinewgame", f"position fen {fen}", "isready")
        self.read_until("readyok")
        cpu = cpu_seconds(self.proc.pid)
        t = time.monotonic()
        self.send(f"go nodes {nodes}")
        lines = self.read_until("bestmove")
        dt, cpu_end = time.monotonic() - t, cpu_seconds(self.proc.pid)
        searched = 0
        for words in (line.split() for line in lines):
            if words[:1] == ["info"] and "nodes" in words[:-1]:
                searched = int(words[words.index("nodes") + 1])
        best = lines[-1].split()
        used = cpu_end - cpu if cpu is not None and cpu_end is not None else None
        return searched, dt, used, best[1] if len(best) > 1 else "(none)"

    def quit(self) -> None:
        if self.proc.poll() is not None:
            return
        try:
            self.send("quit")
            self.proc.wait(timeout=30)
        except (OSError, EngineError, subprocess.TimeoutExpired):
            self.proc.kill()
            self.proc.wait()
