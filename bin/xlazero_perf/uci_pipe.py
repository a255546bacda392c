"""An engine process driven through its UCI pipe, each output line time-stamped (for
``bin/perf/ucilatency`` and ``bin/perf/treemem``)."""

from __future__ import annotations

import queue
import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


class Engine:
    """A UCI engine process whose output lines are time-stamped by a reader thread."""

    def __init__(self, command: list[str], env: dict[str, str], stderr: int | None = None) -> None:
        self.started = time.monotonic()
        self.proc = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
            env=env,
            cwd=ROOT,
            stderr=stderr,
        )
        assert self.proc.stdin and self.proc.stdout  # pipes; Popen: Optional
        self._in, self._out = self.proc.stdin, self.proc.stdout
        self.lines: queue.Queue[tuple[float, str]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self._out:
            self.lines.put((time.monotonic(), line.strip()))
        self.lines.put((time.monotonic(), ""))

    def send(self, *lines: str) -> float:
        """Write lines; returns the time just *before* writing (read after the write, it could
        come after the engine's answer: this thread may wait up to Python's 5 ms GIL switch
        interval while the reader thread stamps that answer)."""
        t = time.monotonic()
        self._in.write("".join(line + "\n" for line in lines))
        self._in.flush()
        return t

    def wait_for(self, prefix: str, timeout: float = 120.0) -> float:
        """Time stamp of the next line starting with ``prefix``."""
        deadline = time.monotonic() + timeout
        while True:
            t, line = self.lines.get(timeout=max(deadline - time.monotonic(), 0.01))
            if line.startswith(prefix):
                return t
            if line == "" and self.proc.poll() is not None:
                raise RuntimeError(f"engine exited (code {self.proc.returncode}) before {prefix!r}")

    def quit(self) -> None:
        try:
            self.send("quit")
            self.proc.wait(timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            self.proc.kill()
