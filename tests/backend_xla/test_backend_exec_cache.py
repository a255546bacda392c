"""The engine's caches of converted networks and whole executables (backend_xla.exec_cache, issue
41): a second load of a file takes both from the cache and gives the same outputs; a changed
file has other keys; a corrupt entry is ignored, removed and written again; a program JAX read
from its own persistent cache is compiled afresh before it is stored (it does not serialize
whole), so that the next start loads it.

The shipped 6×64 network with XLA's convolution keeps each compile well under a second."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import backend_xla
from backend_xla import runtime
from backend_xla.exec_cache import NETWORK_SUBDIR, SUBDIR
from conftest import REPO_ROOT

NET = REPO_ROOT / "nets" / "xlazero-sf6x64.onnx"
OPTIONS = "conv_method=lax,batch_buckets=7;16"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    """A private folder for the engine's caches (JAX's own, process-wide, is left as it is)."""
    folder = tmp_path / "cache"
    monkeypatch.setattr(runtime, "_cache_dir", str(folder))
    return folder


@pytest.fixture
def net_file(tmp_path) -> Path:
    path = tmp_path / "net.onnx"
    shutil.copyfile(NET, path)
    return path


def _planes() -> np.ndarray:
    return np.random.default_rng(1).random((5, 112, 8, 8)).astype(np.float32)


def _load(path: Path):
    net = backend_xla.load_network(path, OPTIONS)
    out = net.evaluate(_planes())
    net.close()
    return net, out


def _same(a, b) -> None:
    for field in ("policy", "q", "d", "m"):
        np.testing.assert_array_equal(getattr(a, field), getattr(b, field))


@pytest.fixture(scope="module")
def first_load(tmp_path_factory):
    """One load into empty caches, shared by the tests that start from a filled cache (each
    compile and store costs about half a second): the folder it filled, the network, its
    outputs."""
    folder = tmp_path_factory.mktemp("first") / "cache"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(runtime, "_cache_dir", str(folder))
        net, out = _load(NET)
    return folder, net, out


@pytest.fixture
def filled(cache, first_load) -> Path:
    """This test's private cache folder, holding the entries of ``first_load``."""
    shutil.copytree(first_load[0], cache)
    return cache


def test_second_load_comes_from_the_caches(filled, first_load, net_file):
    _, first, out1 = first_load
    assert first.networks.misses == 1 and first.executables.misses == 1
    assert list((filled / SUBDIR).glob("*.pkl")) and list((filled / NETWORK_SUBDIR).glob("*.pkl"))
    second, out2 = _load(net_file)
    assert second.networks.hits == 1 and second.executables.hits == 1
    # The hook into JAX's executables (serialized whole) took effect (tests/test_private_hooks.py).
    assert runtime.HOOKS["executables_serialized"] is True
    assert type(second.converter).__name__ == "CachedConverter"
    _same(out1, out2)
    assert second.has_wdl == first.has_wdl and second.input_format == first.input_format


def test_a_changed_file_changes_the_keys(filled, first_load, net_file):
    first = first_load[1]
    model = onnx.load(str(net_file))
    model.metadata_props.add(key="note", value="changed")
    onnx.save(model, str(net_file))
    second, _ = _load(net_file)
    assert second.digest != first.digest
    assert second.programs.cache_key(7) != first.programs.cache_key(7)
    assert second.networks.hits == 0 and second.executables.hits == 0
    assert len(list((filled / NETWORK_SUBDIR).glob("*.pkl"))) == 2


def test_corrupt_entries_are_ignored_and_rebuilt(filled, first_load, net_file):
    out1 = first_load[2]
    entries = list((filled / SUBDIR).glob("*.pkl")) + list((filled / NETWORK_SUBDIR).glob("*.pkl"))
    assert len(entries) == 2
    for i, entry in enumerate(entries):  # one garbage, one truncated
        data = entry.read_bytes()
        entry.write_bytes(b"not a pickle" if i == 0 else data[: len(data) // 2])
    second, out2 = _load(net_file)
    assert second.networks.rejected == 1 and second.executables.rejected == 1
    _same(out1, out2)
    third, out3 = _load(net_file)  # written again by the second load
    assert third.networks.hits == 1 and third.executables.hits == 1
    _same(out1, out3)


def test_an_entry_with_other_outputs_is_not_used(filled, first_load, net_file):
    import pickle

    (entry,) = (filled / SUBDIR).glob("*.pkl")
    data = pickle.loads(entry.read_bytes())
    data["zero_outputs"] = [x + 1 for x in data["zero_outputs"]]
    entry.write_bytes(pickle.dumps(data))
    second, out2 = _load(net_file)
    assert second.executables.rejected == 1
    _same(first_load[2], out2)


def test_model_protos_and_cache_dir_none_are_not_cached(net_file, tmp_path):
    net = backend_xla.load_network(onnx.load(str(net_file)), OPTIONS + ",cache_dir=none")
    assert net.executables is None and net.networks is None
    net.close()


LOAD = """
import json, sys
import backend_xla
net = backend_xla.load_network(sys.argv[1], "conv_method=lax,batch_buckets=7")
print(json.dumps([net.executables.hits, net.executables.misses, net.networks.hits]))
"""


@pytest.mark.slow  # 6 s, two process starts: the cache round trip runs by default above
def test_a_program_read_from_jax_cache_is_stored_whole(tmp_path, net_file):
    """JAX's persistent cache holds the program, the engine's does not (an update of the
    engine): the next start must load it from the engine's cache, not fail to."""
    env = {k: v for k, v in os.environ.items() if k not in ("JAX_COMPILATION_CACHE_DIR",)}
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    env["PYTHONPATH"] = str(REPO_ROOT)

    def start() -> list[int]:
        out = subprocess.run(
            [sys.executable, "-c", LOAD, str(net_file)],
            env=env, capture_output=True, text=True, timeout=300, check=True,
        )  # fmt: skip
        return json.loads(out.stdout.strip().splitlines()[-1])

    assert start()[:2] == [0, 1]
    (folder,) = (tmp_path / "xdg").rglob(SUBDIR)
    shutil.rmtree(folder)  # JAX's cache keeps the programs
    assert start()[:2] == [0, 1]
    assert list(folder.glob("*.pkl")), "not stored after a JAX cache hit"
    assert start() == [1, 0, 1]


def test_stale_entries_go_when_another_is_written(cache, net_file):
    import time

    from backend_xla.exec_cache import STALE_AFTER_S

    (cache / SUBDIR).mkdir(parents=True)
    stale = cache / SUBDIR / "old-entry.pkl"  # a name no key has
    stale.write_bytes(b"x")
    long_ago = time.time() - STALE_AFTER_S - 60
    os.utime(stale, (long_ago, long_ago))
    _load(net_file)
    assert not stale.exists()
    assert list((cache / SUBDIR).glob("*.pkl"))
