"""What the options name, loaded for :class:`engine.controller.Controller`: the network
(WeightsFile, Backend, BackendOptions), the Syzygy tables (SyzygyPath) and the search's compiled
functions, each telling the user what it loaded or why it could not. When to load, and what a
change drops with the old one (a running search, the tree, the NN cache), is the controller's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Protocol

import engine
from engine import options as opts
from engine.backend import Network, load_network
from engine.hooks import not_in_effect
from engine.search import warmup
from engine.tablebase import Tablebase, TablebaseError, open_tablebases

NETS_DIR = Path(engine.__file__).resolve().parent.parent / "nets"
DEFAULT_NETWORK = NETS_DIR / opts.DEFAULT_NETWORK_FILE
UNTRAINED_KEY = "xlazero_untrained"
NETWORK_OPTIONS = ("WeightsFile", "Backend", "BackendOptions")
"""Options whose change replaces the network (and drops the tree and cache computed by it)."""

PROGRESS_EVERY_S = 5.0
"""Seconds between the ``info string`` lines of a long compile (the first start)."""

NETWORK_SUFFIXES = (".pb.gz", ".pb", ".onnx")
"""Files ``<autodiscover>`` takes for networks."""


class Reporter(Protocol):
    """Where loading tells the user what happened (the controller's listener)."""

    def message(self, text: str) -> None:
        """A note for the user (``info string``)."""

    def error(self, text: str) -> None:
        """A problem the user must see (``info string error: …``)."""

    def log(self, text: str) -> None:
        """A line for the log only (lc0's ``LOGFILE``), never sent to the GUI; kept, as the
        dialogue is, for a log that opens later."""

    @property
    def logging(self) -> bool:
        """Whether a log is open: a line that costs to make (the move stats) is made only then."""


class NetworkLoadError(Exception):
    """The options name a network that cannot be loaded; the message says which and why."""


def resolve_weights(value: str) -> Path:
    """WeightsFile value -> path: ``<default>`` is the project's shipped network, and
    ``<autodiscover>`` the newest network file in the working directory, else beside the engine
    (the repository root, then nets/), as lc0 looks in its working and binary directories."""
    if value in (opts.DEFAULT_WEIGHTS, ""):
        return DEFAULT_NETWORK
    if value == opts.AUTODISCOVER:
        for folder in (Path.cwd(), NETS_DIR.parent, NETS_DIR):
            found = (
                [p for p in folder.iterdir() if p.is_file() and p.name.endswith(NETWORK_SUFFIXES)]
                if folder.is_dir()
                else []
            )
            if found:
                return max(found, key=lambda p: (p.stat().st_mtime, p.name))
        return Path(
            f"{opts.AUTODISCOVER}: no {'/'.join(NETWORK_SUFFIXES)} file in "
            f"{Path.cwd()}, {NETS_DIR.parent} or {NETS_DIR}"
        )
    return Path(value).expanduser()


def is_untrained(path: Path) -> bool:
    """Whether an ONNX file carries the shipped-untrained marker in its metadata."""
    if path.suffix != ".onnx":
        return False
    try:
        import onnx

        model = onnx.load(str(path), load_external_data=False)
    except Exception:
        return False
    return any(p.key == UNTRAINED_KEY and p.value == "1" for p in model.metadata_props)


def network_key(values: Mapping[str, Any]) -> tuple:
    """What identifies the network the options name: equal keys, the same network."""
    return tuple(values[k] for k in NETWORK_OPTIONS)


def load_named_network(values: Mapping[str, Any], reporter: Reporter) -> Network:
    """The network the options name, announced to ``reporter``; NetworkLoadError says why not."""
    path = resolve_weights(values["WeightsFile"])
    backend = values["Backend"]
    if backend != "random":
        reporter.log(f"Loading weights file from: {path}")  # lc0's loader.cc
        if not path.exists():
            raise NetworkLoadError(f"cannot load network {path}: file not found")
    try:
        network = load_network(str(path), values["BackendOptions"], backend=backend)
    except Exception as exc:
        raise NetworkLoadError(
            f"cannot load network {path} with backend {backend}: {type(exc).__name__}: {exc}"
        ) from exc
    attributes = network.attributes()
    reporter.message(f"loaded network {attributes.name} ({path}) with backend {backend}")
    for line in attributes.description:
        reporter.message(line)
        reporter.log(line)  # the backend's lines, as lc0's backends log them
    for hook in not_in_effect():
        reporter.message(
            f"warning: {hook} did not take effect: a version of its library other than the "
            "tested one (pyproject.toml); slower, not wrong (engine/hooks.py)"
        )
    if backend != "random" and is_untrained(path):
        reporter.message(
            f"network {path.name} is untrained (random weights): its moves "
            "are not meaningful; set WeightsFile to a trained network"
        )
    return network


def log_time(now: float) -> str:
    """``now`` (time.time()) as the log writes the time: local date and time to the
    microsecond (lc0's ``MMDD HH:MM:SS.uuuuuu``)."""
    stamp = time.strftime("%m%d %H:%M:%S", time.localtime(now))
    return f"{stamp}.{int(now * 1_000_000) % 1_000_000:06d}"


def open_syzygy(path: str, reporter: Reporter) -> Tablebase | None:
    """The Syzygy tables of ``path`` (None: no path); a bad path is reported, and the engine
    goes on without tables."""
    try:
        tablebase = open_tablebases(path)
    except TablebaseError as exc:
        reporter.error(str(exc))
        return None
    if tablebase is not None:
        reporter.message(
            f"Syzygy tablebases: {tablebase.tables} tables, up to "
            f"{tablebase.max_pieces} pieces, from {path}"
        )
    return tablebase


def start_warm_up() -> None:
    """Begin making the search's compiled functions ready on a thread as the process starts
    (after the backend's imports, which would only take turns with it on the GIL): it needs no
    option, and it overlaps the reading of ``uci`` and the network's load at ``isready``,
    which then waits for it (:func:`warm_up_search`)."""
    if not warmup.is_done():
        threading.Thread(target=_warm_up_quietly, name="search warm-up", daemon=True).start()


def _warm_up_quietly() -> None:
    try:
        warmup.warm_up()
    except Exception:  # isready runs it again on its own thread and reports why
        pass


def warm_up_search(reporter: Reporter) -> None:
    """The search's compiled functions (engine.search.warmup): loaded from numba's cache in a
    fraction of a second, or, on the first start after an install or update, compiled, which
    takes tens of seconds; then a line every :data:`PROGRESS_EVERY_S` tells the user why."""
    if not warmup.is_done():
        if warmup.cache_is_warm():
            warmup.warm_up()
        else:
            _compile(reporter, "the search's functions", warmup.warm_up)


def _compile(reporter: Reporter, what: str, compile_them: Callable[[], None]) -> None:
    reporter.message(
        f"compiling {what} (numba), once after an install or update: "
        "this takes a while; later starts load them from the cache"
    )
    start = time.monotonic()
    finished = threading.Event()

    def progress() -> None:
        while not finished.wait(PROGRESS_EVERY_S):
            reporter.message(f"compiling {what}: {time.monotonic() - start:.0f} s so far")

    ticker = threading.Thread(target=progress, name="warm-up progress", daemon=True)
    ticker.start()
    try:
        compile_them()
    finally:
        finished.set()
        ticker.join()
    reporter.message(f"compiled {what} in {time.monotonic() - start:.1f} s")
