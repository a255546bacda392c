"""An in-process UCI session on a deterministic fake network, for the option effect tests.

The engine runs in this process (no subprocess, no JAX): ``UciEngine`` fed line by line, its
output collected. The network is the ``effects`` backend registered here: lc0's random backend
(outputs a pure function of the input planes) with, from BackendOptions or the weights file
name, a favourite move whose logit is raised, a moves-left head, a delay per evaluation, and a
record of every batch it evaluates.

Its ``delay`` is in seconds (``delay=0.25``: 250 ms a batch), not the random backend's
milliseconds: this backend reads its options itself (:func:`_load`), and the random backend's
own ``delay`` stays 0 here. Each call sleeps on its own thread (calls at once overlap), where the
random backend's simulated device takes them one at a time.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from engine.backend import POLICY_MOVES, register_backend
from engine.backends.random import RandomNetwork

FAVOURITE_BOOST = 8.0
"""Logit added to the favourite move: with the random logits' spread (2) it takes most visits."""


BLACK_TO_MOVE_PLANE = 108
"""lc0's input format 1: plane 108 is all ones when Black is to move."""

LOADED: list["EffectsNetwork"] = []
"""Every network the backend loaded, newest last (a session reads its own from here)."""


class EffectsNetwork(RandomNetwork):
    def __init__(self, favourite: str | None = None, mlh: bool = False, delay: float = 0.0,
                 q: float | None = None) -> None:
        super().__init__(f"effects-{favourite or 'random'}")
        self.has_mlh = mlh
        self.delay = delay
        self.q = q
        self.favourite_index = None
        if favourite:
            # The index in the side to move's frame: the move as given for White, mirrored for Black.
            self.favourite_index = POLICY_MOVES.index(favourite)
        self.batches: list[int] = []
        self.most_at_once = 0
        """The most calls it was in at once (the search's threads each make their own)."""
        self._at_once = 0
        self._lock = threading.Lock()
        LOADED.append(self)

    def evaluate(self, planes: np.ndarray):
        with self._lock:
            self._at_once += 1
            self.most_at_once = max(self.most_at_once, self._at_once)
        try:
            if self.delay:
                time.sleep(self.delay)
        finally:
            with self._lock:
                self._at_once -= 1
        out = super().evaluate(planes)
        self.batches.append(len(planes))
        if self.favourite_index is not None:
            out.policy[:, self.favourite_index] += FAVOURITE_BOOST
        if self.q is not None:  # White's value in every position (half the rest drawn)
            black_to_move = planes[:, BLACK_TO_MOVE_PLANE].any(axis=(1, 2))
            out.q[:] = np.where(black_to_move, -self.q, self.q)
            out.d[:] = (1.0 - abs(self.q)) / 2.0
        if self.has_mlh:
            # Plies left: a function of the planes, as everything else, spread over 10..90.
            for i in range(len(planes)):
                digest = hashlib.blake2b(planes[i].tobytes(), digest_size=2).digest()
                out.m[i] = 10.0 + 80.0 * int.from_bytes(digest, "little") / 65535.0
        return out


def _load(path: str, options: str) -> EffectsNetwork:
    """BackendOptions ``favourite=e2e4`` (or a weights file named ``e2e4.*``), ``mlh=1``,
    ``delay=SECONDS`` (a float: each batch sleeps that long), ``q=VALUE`` (White's value)."""
    kv = dict(item.split("=", 1) for item in options.split(",") if item)
    stem = Path(path).name.split(".")[0]
    favourite = kv.get("favourite") or (stem if re.fullmatch(r"[a-h][1-8][a-h][1-8]", stem) else None)
    q = float(kv["q"]) if "q" in kv else None
    return EffectsNetwork(favourite, kv.get("mlh") == "1", float(kv.get("delay", 0)), q)


register_backend("effects", _load)


NETWORK_PACE = "delay=0.005"
"""BackendOptions for a search that runs on the clock: each batch takes 5 ms (this backend's
``delay`` is seconds; measured 5.1 ms a batch), as a network's does, so the search's threads
wait on it instead of spinning a core each for the whole budget (``go movetime 1000``: 1.0 s of
CPU and 65,000 nodes on the bare backend, 0.09 s and 1,300 nodes at this pace), and several
search threads' calls are in the network at once (the Threads test counts them). ``delay=5``
would be 5 s a batch: a search on a 1 s budget would wait 5 s for the root's first evaluation
(the budget waits for it) and do nothing else. tests/engine/test_option_harness.py checks it."""


class _Lines:
    """A thread-safe text sink: the engine writes from its search thread."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._lock = threading.Lock()

    def write(self, text: str) -> None:
        with self._lock:
            self.lines.extend(line for line in text.splitlines() if line)

    def flush(self) -> None:
        pass


@dataclass
class Reply:
    """The lines one ``go`` produced and what they say."""

    lines: list[str]
    seconds: float
    bestmove: str = ""
    infos: list[str] = field(default_factory=list)
    stats: dict[str, dict[str, float]] = field(default_factory=dict)
    node: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.bestmove = self.lines[-1].split()[1]
        self.infos = [ln for ln in self.lines if ln.startswith("info depth")]
        for line in self.lines:
            if line.startswith("info string") and " N: " in line:
                label = line.split()[2]
                values = {k: float(v) for k, v in re.findall(r"\b(N|P|WL|D|M|Q|U|S|V):\s*(-?\d+(?:\.\d*)?)", line)}
                if label == "node":
                    self.node = values
                else:
                    self.stats[label] = values

    @property
    def final(self) -> list[str]:
        """The info lines of the last report (one per MultiPV line)."""
        last = [i for i, ln in enumerate(self.infos) if " multipv " not in ln or " multipv 1 " in ln][-1]
        return self.infos[last:]

    def field(self, name: str, line: str | None = None) -> int:
        """An integer field of an info line (the last one by default)."""
        tokens = (line or self.infos[-1]).split()
        return int(tokens[tokens.index(name) + 1])

    @property
    def visits(self) -> dict[str, int]:
        return {m: int(s["N"]) for m, s in self.stats.items()}


class Session:
    """One engine: ``Session(CPuct=2)`` is the engine after ``setoption name CPuct value 2``.

    Defaults here differ from the engine's so that a ``go nodes`` search is repeatable and
    cheap: the ``effects`` backend (its weights file is any file), Threads 1 (several search
    threads interleave by the machine's timing, as lc0's), SmartPruningFactor 0 (smart pruning
    may stop 200 ms after the first evaluation, which depends on the machine's speed) and
    MaxPrefetch 0 (filling minibatches for the cache is most of a small search's work).
    VerboseMoveStats is on, to read the root's visits."""

    BASE = {"Backend": "effects", "WeightsFile": __file__,  # any file; .onnx ones get opened
            "Threads": "1", "SmartPruningFactor": "0", "MaxPrefetch": "0",
            "VerboseMoveStats": "true"}

    def __init__(self, **options: object) -> None:
        from engine.uci import UciEngine

        self.out = _Lines()
        self._loaded_before = LOADED[-1] if LOADED else None
        self.uci = UciEngine(self.out)
        for name, value in {**self.BASE, **options}.items():
            self.set(name, value)

    def set(self, name: str, value: object) -> None:
        if isinstance(value, bool):
            value = str(value).lower()
        before = len(self.out.lines)
        self.uci.handle(f"setoption name {name} value {value}")
        errors = [ln for ln in self.out.lines[before:] if "error" in ln]
        assert not errors, f"expected setoption {name}={value} to be accepted, got {errors}"

    def send(self, line: str) -> list[str]:
        before = len(self.out.lines)
        self.uci.handle(line)
        return self.out.lines[before:]

    def go(self, go: str = "go nodes 200", position: str = "position startpos",
           timeout: float = 60.0) -> Reply:
        self.uci.handle(position)
        before = len(self.out.lines)
        t0 = time.monotonic()
        self.uci.handle(go)
        while not any(ln.startswith("bestmove") for ln in self.out.lines[before:]):
            if time.monotonic() - t0 > timeout:
                raise AssertionError(f"expected a bestmove within {timeout}s of {go!r}, got "
                                     f"{self.out.lines[before:][-5:]}")
            time.sleep(0.002)
        seconds = time.monotonic() - t0
        return Reply(self.out.lines[before:], seconds)

    @property
    def network(self) -> EffectsNetwork:
        """The network this session loaded last."""
        assert LOADED and LOADED[-1] is not self._loaded_before, "expected a network loaded"
        return LOADED[-1]

    def close(self) -> None:
        self.uci.handle("quit")


def top_share(reply: Reply) -> float:
    """Share of the root's visits on its most visited move."""
    visits = reply.visits
    return max(visits.values()) / sum(visits.values())


def visited_moves(reply: Reply) -> int:
    return sum(n > 0 for n in reply.visits.values())
