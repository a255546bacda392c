"""The engine's own cache of compiled batch sizes: XLA executables serialized whole, so that a warm
start loads a program instead of tracing the network, lowering it and asking JAX's persistent
cache for it (issue 41: for Maia-1900's batch of 7 on the 2-core CPU, 0.6-0.8 s of trace, lowering
and cache lookups for the two copies against about 0.2 s to load them from here).

An entry is a pickle of the programs (``jax.experimental.serialize_executable``), with the outputs
each program gave for an all-zero batch when it was written. It is keyed by everything its code
depends on: the network file's contents, the backend options, the batch size and its placement,
this package's sources, the JAX version, the devices and the host CPU, the XLA flags in the
environment. Loading runs each program once on the zero batch (its first run, which would
otherwise fall into the first search) and compares the outputs: an entry that does not load, does
not run or gives other outputs is removed and compiled again, never used.

A program that JAX itself read from its persistent cache serializes without some of its functions
(it loads, then fails to run: "Function ... not found"), so a program is stored only after a copy
deserialized from the bytes to store ran and matched it; where it did not, the size is compiled
once more with JAX's cache out of it (``backend_xla.runtime._without_jax_cache``).
"""

from __future__ import annotations

import copy as copy_module
import hashlib
import os
import pickle
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from .network_file import Heads

FORMAT = "1"
"""Part of every key: a change of this module's entry format starts new entries."""
SUBDIR = "executables"
"""Folder of the entries, inside the JAX cache directory of the ``cache_dir`` option."""
ENV_KEYS = (
    "XLA_FLAGS",
    "XLAZERO_XLA_COMPILE_CORES",
    "PJRT_NAMES_AND_LIBRARY_PATHS",
    "JAX_PLATFORMS",
    "JAX_ENABLE_X64",
)
"""Environment variables that change what XLA compiles."""

_PACKAGE = Path(__file__).resolve().parent
_sources_digest: str | None = None


def file_digest(path: str | os.PathLike) -> str:
    """sha256 of a file's contents (a network file: a few MB, a few ms)."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sources_digest() -> str:
    """sha256 of this package's Python sources (the converter and ops shape the program)."""
    global _sources_digest
    if _sources_digest is None:
        digest = hashlib.sha256()
        for file in sorted(_PACKAGE.rglob("*.py")):
            digest.update(file.relative_to(_PACKAGE).as_posix().encode())
            digest.update(file.read_bytes())
        _sources_digest = digest.hexdigest()
    return _sources_digest


def _host_cpu() -> str:
    """The host CPU's model and feature flags (XLA's CPU code is compiled for them)."""
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        import platform

        return platform.processor() or platform.machine()
    keep = [
        line
        for line in text.splitlines()[:64]
        if line.startswith(("model name", "flags", "Features"))
    ]
    return "\n".join(dict.fromkeys(keep))


UNKEYED_OPTIONS = (
    "background_compile",
    "cache_dir",
    "device_calls",  # the programs' copies are in the key's parts
    "hlo_proto_dump_dir",
    "policy_gather",
)
"""Backend options that change neither a converted network nor a compiled program."""


def _keyed(options: Mapping[str, Any]) -> list[tuple[str, str]]:
    return sorted((k, repr(v)) for k, v in options.items() if k not in UNKEYED_OPTIONS)


def entry_key(network_digest: str, options: Mapping[str, Any], parts: tuple, devices: list) -> str:
    """The key of one compiled batch size: ``parts`` names the size and its placement."""
    import jax
    import jaxlib

    fields = (
        FORMAT,
        network_digest,
        _keyed(options),
        parts,
        sources_digest(),
        jax.__version__,
        jaxlib.__version__,
        sys.version,
        [(d.platform, d.device_kind, d.id, str(d.client.platform_version)) for d in devices],
        [(k, os.environ.get(k)) for k in ENV_KEYS],
        _host_cpu(),
    )
    return hashlib.sha256(repr(fields).encode()).hexdigest()[:40]


STALE_AFTER_S = 14 * 24 * 3600
"""Entries neither written nor used for this long are removed when another is written (those of
an older engine or JAX version, or of a network no longer used)."""


def _write(directory: Path, path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, then remove the folder's stale entries."""
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    now = time.time()
    for old in directory.iterdir():
        try:
            if now - old.stat().st_mtime > STALE_AFTER_S:
                old.unlink()
        except OSError:
            pass  # removed meanwhile by another process


def _used(path: Path) -> None:
    """Mark an entry used now (its time stamp keeps it from being removed as stale)."""
    try:
        os.utime(path)
    except OSError:
        pass


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(
        x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
        for x, y in zip(a, b)
    )


def _execution_devices(executable, devices: list, copy: int) -> list:
    return list(devices[: executable.devices]) if executable.devices > 1 else [devices[copy]]


class _PickleEntries:
    """Pickled entries in ``directory`` (created when first written), one file a key, with the
    counts of hits, misses and rejected entries (found but not used: removed)."""

    def __init__(self, directory: str | os.PathLike) -> None:
        self.directory = Path(directory)
        self.unwritable = False  # a write failed for the folder, not for what was written
        self.hits = 0
        self.misses = 0
        self.rejected = 0

    def path(self, key: str) -> Path:
        return self.directory / f"{key}.pkl"

    def _read(self, path: Path) -> bytes | None:
        try:
            return path.read_bytes()
        except OSError:
            self.misses += 1
            return None

    def _reject(self, path: Path) -> None:
        """A corrupt, truncated or foreign entry: removed, never used."""
        self.rejected += 1
        self.misses += 1
        try:
            path.unlink()
        except OSError:
            pass

    def _hit(self, path: Path) -> None:
        _used(path)
        self.hits += 1


class ExecutableCache(_PickleEntries):
    """Compiled batch sizes (see the module docstring)."""

    def load(self, key: str, executable_shell, devices: list) -> bool:
        """Fill ``executable_shell`` (a :class:`backend_xla.runtime.Executable` with its params,
        rows and placement set, no programs) from the entry ``key``; False on a miss or a bad
        entry (which is removed)."""
        path = self.path(key)
        data = self._read(path)
        if data is None:
            return False
        try:
            from jax.experimental import serialize_executable as se

            entry = pickle.loads(data)

            def deserialize(copy: int):
                payload, in_tree, out_tree = entry["programs"][copy]
                on = _execution_devices(executable_shell, devices, copy)
                return se.deserialize_and_load(
                    payload, in_tree, out_tree, backend=on[0].client, execution_devices=on
                )

            copies = len(entry["programs"])
            executable_shell.programs = _on_threads(deserialize, copies)
            outputs = _on_threads(executable_shell.zero_run, copies)
            if not all(_same(out, entry["zero_outputs"]) for out in outputs):
                raise ValueError("outputs differ from the stored ones")
        except Exception:  # compiled again
            executable_shell.programs = []
            self._reject(path)
            return False
        executable_shell.first_run_done = True  # each copy ran above
        self._hit(path)
        return True

    def store(self, key: str, executable, devices: list) -> bool:
        """Write ``executable`` under ``key`` if a copy loaded from the bytes runs and gives its
        outputs; False where it does not (nothing is written) or the folder is not writable."""
        from jax.experimental import serialize_executable as se

        try:
            reference = executable.zero_run(0)
            blobs = [se.serialize(p) for p in executable.programs]
            probe = copy_module.copy(executable)  # the stored bytes' programs, the same params
            probe.programs = []
            for copy, (payload, in_tree, out_tree) in enumerate(blobs):
                on = _execution_devices(executable, devices, copy)
                probe.programs.append(
                    se.deserialize_and_load(
                        payload, in_tree, out_tree, backend=on[0].client, execution_devices=on
                    )
                )
                if not _same(probe.zero_run(copy), reference):
                    return False
            data = pickle.dumps({"programs": blobs, "zero_outputs": reference}, protocol=5)
        except Exception:
            return False
        try:
            _write(self.directory, self.path(key), data)
        except OSError:
            self.unwritable = True
            return False  # an unwritable cache only costs time
        return True


NETWORK_SUBDIR = "networks"
"""Folder of the converted networks (:class:`NetworkCache`), beside :data:`SUBDIR`."""


def network_key(network_digest: str, options: Mapping[str, Any]) -> str:
    """The key of a converted network: the file's contents, the options, this package's sources
    (the reader and converter) and the numpy version (the pickled arrays)."""
    fields = (
        FORMAT,
        network_digest,
        _keyed(options),
        sources_digest(),
        np.__version__,
        sys.version,
    )
    return hashlib.sha256(repr(fields).encode()).hexdigest()[:40]


class NetworkCache(_PickleEntries):
    """Networks as the converter left them (parameters for both filter layouts, the outputs and
    the input format), so that a warm start neither reads the weight file into ONNX nor imports
    onnx; a compile the cache of executables lacks converts the file then (:class:`CachedConverter`).
    Entries are pickles (a dict); one that does not load or lacks a field is removed and ignored."""

    FIELDS = ("platform", "has_wdl", "has_mlh", "input_format", "outputs", "input_specs",
              "hwio_weights", "params", "packed_input")  # fmt: skip

    def load(self, key: str) -> dict[str, Any] | None:
        path = self.path(key)
        data = self._read(path)
        if data is None:
            return None
        try:
            entry = pickle.loads(data)
            if not isinstance(entry, dict) or any(f not in entry for f in self.FIELDS):
                raise ValueError("not an entry")
        except Exception:
            self._reject(path)
            return None
        self._hit(path)
        return entry

    def store(self, key: str, entry: dict[str, Any]) -> bool:
        try:
            _write(self.directory, self.path(key), pickle.dumps(entry, protocol=5))
        except (OSError, pickle.PicklingError):
            return False
        return True


@dataclass(frozen=True)
class Cached:
    """What the cache of converted networks holds for a file (:func:`lookup`): where a warm start
    finds it, the ``converter`` and ``heads`` that stand in for stages 1-3 of a load."""

    digest: str | None = None
    """The file's sha256 where the caches are on (their keys), else None."""
    networks: NetworkCache | None = None
    key: str | None = None
    converter: CachedConverter | None = None
    heads: Heads | None = None

    def keep(self, converter, platform: str, heads: Heads) -> None:
        """Keep a network converted by stage 3 (where the cache is on for its file)."""
        if self.networks is None or self.key is None:
            return
        specs = [converter.input_specs(1), converter.input_specs(2)]
        self.networks.store(
            self.key,
            {
                "platform": platform,
                "has_wdl": heads.has_wdl,
                "has_mlh": heads.has_mlh,
                "input_format": heads.input_format,
                "outputs": list(converter.output_names),
                "input_specs": [
                    (a.name, a.shape, a.dtype.str, a.shape[:1] != b.shape[:1])
                    for a, b in zip(*specs)
                ],
                "hwio_weights": sorted(converter.hwio_weights),
                "packed_input": bool(converter.packed_input),
                "params": {h: converter.params_for(hwio_filters=h) for h in (False, True)},
            },
        )


def lookup(path, options: Mapping[str, Any], platform: str, cache_dir, rebuild) -> Cached:
    """The cache's entry for the file at ``path`` (not an in-memory model) converted with
    ``options`` for ``platform``, under ``cache_dir`` (None: off): a :class:`CachedConverter`
    whose ``rebuild()`` converts the file once something needs more than its parameters."""
    if cache_dir is None or not isinstance(path, (str, os.PathLike)):
        return Cached()
    try:
        digest = file_digest(path)
    except OSError:
        return Cached()  # reported by the reading
    networks = NetworkCache(Path(cache_dir) / NETWORK_SUBDIR)
    key = network_key(digest, options)
    entry = networks.load(key)
    if entry is None or entry["platform"] != platform:
        return Cached(digest, networks, key)  # converted for another platform's convolution
    heads = Heads(entry["has_wdl"], entry["has_mlh"], entry["input_format"])
    return Cached(digest, networks, key, CachedConverter(entry, str(path), rebuild), heads)


class TensorSpec(NamedTuple):
    """A graph input's name, shape and dtype (onnx_to_jax's, without importing onnx)."""

    name: str
    shape: tuple[int, ...]
    dtype: np.dtype


class CachedConverter:
    """Stands in for :class:`backend_xla.onnx_to_jax.Converter` with a :class:`NetworkCache`
    entry: the parameters and input specs come from the entry; anything else (building a
    function to compile) converts the file first, once, with ``build()``."""

    def __init__(self, entry: dict[str, Any], source: str, build) -> None:
        import threading

        self.source = source
        self.output_names = list(entry["outputs"])
        self.hwio_weights = set(entry["hwio_weights"])
        self.packed_input = bool(entry["packed_input"])
        self._params = entry["params"]
        self._specs = entry["input_specs"]
        self._build = build
        self._real = None
        self._lock = threading.Lock()

    def params_for(self, hwio_filters: bool) -> dict[str, np.ndarray]:
        return self._params[bool(hwio_filters)]

    def input_specs(self, batch_size: int) -> list:
        return [
            TensorSpec(name, ((batch_size,) + tuple(shape[1:])) if dynamic else tuple(shape),
                       np.dtype(dtype))
            for name, shape, dtype, dynamic in self._specs
        ]  # fmt: skip

    def real(self):
        """The converter of the file (converted on first use)."""
        with self._lock:
            if self._real is None:
                self._real = self._build()
            return self._real

    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.real(), name)


def _on_threads(fn, count: int) -> list:
    """``[fn(0), ..., fn(count - 1)]``, each on its own thread when there are several: XLA
    reads a program and runs it without the GIL, so a program for each device loads in the
    time of one (a warm start's largest part after the imports). The first error is raised."""
    if count <= 1:
        return [fn(i) for i in range(count)]
    results: list = [None] * count
    errors: list[BaseException] = []

    def run(i: int) -> None:
        try:
            results[i] = fn(i)
        except BaseException as exc:  # raised below, on the caller's thread
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,), name=f"xla load {i}") for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results
