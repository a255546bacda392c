"""What a warm start does before ``readyok`` (issue 41): numba loads the search from its cache
without its lowering registries, the backend's libraries are imported before the search's
warm-up starts, and ``--warm-up`` leaves the engine's bytecode behind."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest
from conftest import REPO_ROOT

import engine.uci as uci
from engine import startup
from engine.backends.random import RandomNetwork
from engine import backend
from engine.search import warmup

CHILD_CHECK = textwrap.dedent(
    """
    import sys
    from engine.startup import configure
    configure(host_devices=False)
    from engine.numba_registries import registries_loaded
    from engine.search.warmup import cache_is_warm, warm_up
    assert cache_is_warm()
    warm_up()  # every compiled function of the search, from numba's cache
    print("after loads", registries_loaded(), "scipy.linalg" in sys.modules)
    import chess
    from engine.backends.random import RandomNetwork
    from engine.search import Limit, Search, from_options
    search = Search(RandomNetwork(), from_options({}))
    search.set_position(chess.Board())
    search.run(Limit(nodes=3000))  # smart pruning on, as in every search at the defaults
    search.close()
    print("after a search", registries_loaded())
    import numba
    import numpy as np

    @numba.njit
    def total(a):
        return a.sum() + len(str(3))

    print("compiled", total(np.arange(4.0)), registries_loaded())
    """
)


def test_a_cache_load_skips_numbas_registries_and_a_compile_installs_them():
    warmup.warm_up()  # fills numba's cache if this test runs first (a fresh clone), as do
    warmup.compile_the_rest()  # as an engine's warm-up does
    RandomNetwork()
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run(
        [sys.executable, "-c", CHILD_CHECK],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO_ROOT,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    lines = out.stdout.splitlines()
    # The whole search ran from the cache without numba's registries or scipy.linalg, and so
    # did a search at the defaults (the warm-up had compiled all it calls: a
    # compile would have installed the registries); the first real compile (arrays and
    # strings: both need registries the loads skipped) works.
    expected = ["after loads False False", "after a search False", "compiled 7.0 True"]
    assert lines == expected, out.stdout


@pytest.mark.parametrize(
    "lines,expected",
    [
        # uciok first (a GUI waits for it), then jax and the warm-up while it sends the options
        (["uci\n", "isready\n", "quit\n"], ["uci", "prepare random", "warm-up", "isready", "quit"]),
        (["isready\n", "quit\n"], ["prepare random", "warm-up", "isready", "quit"]),
        (["quit\n"], ["prepare random", "warm-up", "quit"]),
    ],
)
def test_the_backend_is_prepared_before_the_search_warm_up_starts(monkeypatch, lines, expected):
    calls: list[str] = []
    monkeypatch.setattr(uci, "prepare_backend", lambda name: calls.append(f"prepare {name}"))
    monkeypatch.setattr(uci, "start_warm_up", lambda: calls.append("warm-up"))
    handle = uci.UciEngine.handle

    def recorded(self, line):
        calls.append(line)
        return handle(self, line)

    monkeypatch.setattr(uci.UciEngine, "handle", recorded)
    out = _Sink()
    assert uci.main(["--backend=random"], stdin=lines, stdout=out) == 0
    assert calls == expected
    if lines[0] == "uci\n":
        assert "uciok" in "".join(out.lines)


def test_prepare_backend_runs_the_registered_preparation_only():
    done: list[str] = []
    backend.register_backend(
        "test-prepared",
        lambda path, opts: None,  # type: ignore[arg-type]
        prepare=lambda: done.append("jax"),
    )
    try:
        backend.prepare_backend("test-prepared")
        backend.prepare_backend("no-such-backend")  # the load reports it, not this
        backend.prepare_backend("random")  # nothing to import first
    finally:
        backend._BACKENDS.pop("test-prepared")
        backend._PREPARERS.pop("test-prepared")
    assert done == ["jax"]


def test_the_xla_backend_prepares_by_importing_jax():
    import backend_xla  # noqa: F401  (registers "xla")

    backend.prepare_backend("xla")
    assert "jax" in sys.modules


@pytest.mark.parametrize("dont_write", [True, False])
def test_write_bytecode_compiles_every_module_of_both_packages(tmp_path, monkeypatch, dont_write):
    for package in startup.BYTECODE_PACKAGES:
        shutil.copytree(
            REPO_ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__")
        )
    monkeypatch.setattr(sys, "dont_write_bytecode", dont_write)  # PYTHONDONTWRITEBYTECODE=1
    assert startup.write_bytecode(tmp_path)
    sources = sorted(tmp_path.rglob("*.py"))
    assert len(sources) > 50
    for source in sources:
        cached = source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"
        assert cached.is_file(), source


class _Sink:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def write(self, text: str) -> int:
        self.lines.append(text)
        return len(text)

    def flush(self) -> None:
        pass


PURE_IMPORTS = textwrap.dedent(
    """
    import json, os, sys
    import numba, numba.core.config, jax
    from numba.core import caching, cpu

    def state():
        return {
            "environ": dict(os.environ),
            "numba": {k: repr(v) for k, v in vars(numba.core.config).items() if k.isupper()},
            "jax": {k: repr(v) for k, v in jax.config.values.items()},
            "numba patches": [repr(cpu.CPUContext.load_additional_registries),
                              repr(caching.Cache.load_overload)],
        }

    before = state()
    import engine, backend_xla
    after = state()
    changed = {part: sorted(k for k in set(before[part]) | set(after[part])
                            if before[part].get(k) != after[part].get(k))
               for part in ("environ", "numba", "jax")}
    changed["numba patches"] = before["numba patches"] != after["numba patches"]
    import warnings
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        import engine.board  # before the set-up: numba would cache beside the sources
    changed["warned"] = any("engine.startup.configure()" in str(w.message) for w in caught)
    from engine.startup import configure
    configure()
    configured = state()
    print(json.dumps([changed, sorted(k for k in configured["environ"]
                                      if configured["environ"][k] != after["environ"].get(k)),
                      configured["numba patches"] != after["numba patches"]]))
    """
)


def test_importing_engine_and_backend_xla_changes_nothing_global():
    """``import engine`` and ``import backend_xla`` leave os.environ, numba's configuration and
    patches, and JAX's configuration as they were; engine/startup/'s configure() is what sets
    the process up (here: numba's cache folder, its registries' deferral, XLA's devices); the
    compiled board imported before it warns."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("XLA_FLAGS", "NUMBA_CACHE_DIR", "XLAZERO_NUMBA_CACHE_BASE")}
    env["PYTHONPATH"] = str(REPO_ROOT)
    out = subprocess.run([sys.executable, "-c", PURE_IMPORTS], env=env, capture_output=True,
                         text=True, timeout=120, cwd=REPO_ROOT)
    assert out.returncode == 0, out.stderr[-3000:]
    changed, set_up, patched = json.loads(out.stdout.splitlines()[-1])
    assert changed == {"environ": [], "numba": [], "jax": [], "numba patches": False,
                       "warned": True}
    assert {"NUMBA_CACHE_DIR", "XLAZERO_NUMBA_CACHE_BASE"} <= set(set_up) and patched
