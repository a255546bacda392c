"""JAX runtime glue: plugin registration, compilation cache, the devices a network runs on, and
compilation (on one device, or split over several as :mod:`backend_xla.devices` decides)."""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from . import devices as device_split
from .errors import NetworkError, OptionError
from .options import SPLIT_MIN_ROWS, default_cache_dir

_setup_lock = threading.Lock()
_plugins: set[str] = set()
_cache_dir: str | None = None

HOOKS: dict[str, bool | None] = {
    "jax_cache_bypass": None,
    "xla_threads_pinned": None,
    "xla_codegen_threads_named": None,
    "executables_serialized": None,
}
"""Whether this module's hooks into JAX's and XLA's internals took effect in this process (None:
not used yet): ``jax_cache_bypass`` (:func:`_without_jax_cache` found JAX's cache decision to
set), ``xla_threads_pinned`` (a compile pinned XLA's own threads: some were found by /proc and
their affinity set, :func:`_xla_threads_on_one_core`), ``xla_codegen_threads_named`` (after a
compile, XLA's code-generation threads were found by their name, :data:`CODEGEN_THREADS`),
``executables_serialized`` (the engine's cache of executables, :mod:`backend_xla.exec_cache`,
stored or loaded a program whole; an unwritable folder does not count against it).
tests/test_private_hooks.py asserts each on the pinned JAX."""


def _report(hook: str, took_effect: bool | None) -> None:
    """Record whether ``hook`` took effect; once it did not, it stays reported so."""
    if took_effect is not None and HOOKS[hook] is not False:
        HOOKS[hook] = took_effect


PJRT_PLUGINS_VARIABLE = "PJRT_NAMES_AND_LIBRARY_PATHS"
"""JAX's public way to add PJRT plugins: ``name:path,name:path``, read when JAX first starts
its backends (jax's xla_bridge docs)."""


def find_library(name: str) -> str:
    """The file a PJRT plugin name stands for, as lc0 documents ``plugin_path``: a name with a
    slash is a path (relative or absolute); a bare name is looked up as ``dlopen`` does
    (LD_LIBRARY_PATH, the linker cache, the system folders), by loading it and reading back
    which file the loader mapped."""
    if os.sep in name:
        path = Path(name).expanduser().resolve()
        if not path.is_file():
            raise OptionError(
                f"backend option plugin_path: expected an existing shared library, "
                f"got {name!r} (no such file)"
            )
        return str(path)
    import ctypes

    try:
        ctypes.CDLL(name)
    except OSError as exc:
        raise OptionError(
            f"backend option plugin_path: {name!r} is not found where dlopen looks "
            f"(LD_LIBRARY_PATH, the linker cache, the system folders): {exc}"
        ) from None
    try:
        maps = Path("/proc/self/maps").read_text().splitlines()
    except OSError:
        return name  # not Linux: dlopen found it, and JAX's loader will find it the same way
    for line in maps:
        fields = line.split()
        if len(fields) >= 6 and Path(fields[5]).name == name:
            return fields[5]
    for line in maps:  # a linker-cache alias (libfoo.so -> libfoo.so.1.2): match the stem
        fields = line.split()
        if len(fields) >= 6 and Path(fields[5]).name.startswith(name.split(".so")[0] + ".so"):
            return fields[5]
    return name


def _register_plugin(name: str) -> None:
    """Add the plugin to JAX's plugin list (PJRT_NAMES_AND_LIBRARY_PATHS) before JAX starts
    its backends, then check that JAX sees its platform."""
    path = find_library(name)
    if path in _plugins:
        return
    plugin = Path(path).name.split(".so")[0].removeprefix("lib").removeprefix("pjrt_c_api_")
    plugin = plugin.removeprefix("pjrt_").removesuffix("_plugin") or "plugin"
    before = os.environ.get(PJRT_PLUGINS_VARIABLE)
    entries = [e for e in (before or "").split(",") if e]
    if not any(e.split(":", 1)[-1] == path for e in entries):
        entries.append(f"{plugin}:{path}")
        os.environ[PJRT_PLUGINS_VARIABLE] = ",".join(entries)
    import jax

    try:
        jax.devices(plugin)
    except RuntimeError as exc:
        # A plugin that failed must not stay in the list: JAX would fail on it again at every
        # later start of its backends, CPU included.
        if before is None:
            os.environ.pop(PJRT_PLUGINS_VARIABLE, None)
        else:
            os.environ[PJRT_PLUGINS_VARIABLE] = before
        raise OptionError(
            f"backend option plugin_path: JAX did not start {path} as PJRT plugin {plugin!r}: "
            f"{exc}. JAX reads its plugins once, when it first starts its backends: give "
            f"plugin_path with the first network loaded in the process, or set "
            f"{PJRT_PLUGINS_VARIABLE}={plugin}:{path} before starting"
        ) from None
    _plugins.add(path)


def cache_path(directory: str) -> str | None:
    """The folder the ``cache_dir`` option names (None: ``none``): JAX's persistent cache, with
    the engine's own caches inside it (:mod:`backend_xla.exec_cache`). Once a process has turned
    JAX's cache on, that folder (JAX reads its setting once)."""
    if directory == "none":
        return None
    if _cache_dir is not None:
        return _cache_dir
    if directory == "default" and os.environ.get("JAX_COMPILATION_CACHE_DIR"):
        return os.environ["JAX_COMPILATION_CACHE_DIR"]  # JAX's own setting wins over ours
    return default_cache_dir() if directory == "default" else directory


def _enable_cache(directory: str) -> None:
    """Turn on JAX's persistent compilation cache (once per process; later calls keep the first)."""
    global _cache_dir
    path = cache_path(directory)
    if _cache_dir is not None or path is None:
        return
    import jax

    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError:
        return  # an unwritable cache only costs time; never fail loading a network for it
    jax.config.update("jax_compilation_cache_dir", path)
    # Cache every executable: ours compile in well under JAX's default 1 s threshold.
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    _cache_dir = path


def setup(options: Mapping[str, Any]) -> tuple[list, str | None]:
    """Where a network runs, before its load reads a file: the process-wide options applied (a
    plugin, JAX's cache), the JAX devices one batch is split over (:func:`select`) and the cache
    folder (None: ``cache_dir=none``)."""
    with _setup_lock:
        if options["plugin_path"]:
            _register_plugin(options["plugin_path"])
        _enable_cache(options["cache_dir"])
        return select(options), cache_path(options["cache_dir"])


def select(options: Mapping[str, Any]) -> list:
    """The JAX devices one batch is split over, from the backend options.

    ``device=N`` pins to that one device (``N;M``: those, ``all``: every local device).
    Otherwise ``host_devices`` (``auto``: every local device of the default platform, i.e. one
    per core on CPU when :mod:`backend_xla` was imported before jax) devices share each batch;
    one device means no split. Plugins must be registered before this starts JAX's devices.
    """
    import jax

    try:
        devices = jax.local_devices()
    except Exception as exc:  # e.g. JAX_PLATFORMS=cuda without a GPU build: a bare assertion
        wanted = os.environ.get("JAX_PLATFORMS", "")
        raise OptionError(
            f"JAX could not start its devices{f' (JAX_PLATFORMS={wanted})' if wanted else ''}: "
            f"{type(exc).__name__}: {str(exc) or 'no reason given'}. For NVIDIA GPUs install JAX's "
            "GPU build (pip install -e '.[cuda]', README section GPUs); for the CPU, unset "
            "JAX_PLATFORMS or set it to cpu"
        ) from exc
    index, split = options["device"], options["host_devices"]
    if index is not None:
        if split != "auto":
            raise OptionError(
                f"backend option device: names the devices itself, so "
                f"host_devices must be auto, got host_devices={split}"
            )
        if index == "all":
            return list(devices)
        indices = index if isinstance(index, list) else [index]
        for i in indices:
            if i >= len(devices):
                raise OptionError(
                    f"backend option device: expected indices below "
                    f"{len(devices)} ({devices}), got {i}"
                )
        return [devices[i] for i in indices]
    count = len(devices) if split == "auto" else split
    if count > len(devices):
        hint = (
            "; XLA's CPU client has one device per core only when backend_xla (or "
            "backend_xla.devices.configure_host_devices) runs before the first "
            "import of jax, or when XLA_FLAGS has --xla_force_host_platform_device_count"
        )
        raise OptionError(
            f"backend option host_devices: expected at most {len(devices)} "
            f"(the local devices: {devices}), got {count}"
            f"{hint if devices[0].platform == 'cpu' else ''}"
        )
    return devices[:count]


def lower(
    converter, batch_size: int, params: dict[str, Any], hwio_filters: bool = False, device=None
):
    """The jitted function lowered for ``batch_size`` (gives HLO text / proto); for ``device``
    when given (its inputs and ``params`` placed there), else for JAX's default device."""
    import jax

    fn, specs = converter.function(batch_size, hwio_filters)
    placed = {} if device is None else {"sharding": jax.sharding.SingleDeviceSharding(device)}
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype, **placed) for s in specs]
    param_shapes = {k: jax.ShapeDtypeStruct(v.shape, v.dtype, **placed) for k, v in params.items()}
    try:
        return jax.jit(fn).lower(param_shapes, *shapes)
    except NetworkError:
        raise
    except Exception as exc:
        raise NetworkError(
            f"{converter.source}: lowering for batch size {batch_size} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc


def _lower_split(converter, rows: int, params: device_split.Params):
    """``fn`` under ``shard_map``: each device converts/runs the graph on its ``rows / n`` rows.

    The graph is converted for the per-device batch (its Shape/Reshape constants see that), the
    parameters are replicated (``PartitionSpec()``) and every input and output is split on axis 0;
    the devices do not communicate.
    """
    import jax

    n = len(params.devices)
    fn, _ = converter.function(rows // n)
    specs = converter.input_specs(rows)
    sharded = device_split.shard_batch(fn, params.devices, len(specs), n_replicated=1)
    split = device_split.batch_sharding(params.devices)
    shapes = [jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=split) for s in specs]
    assert params.split is not None  # a split program runs on several devices
    param_shapes = {
        k: jax.ShapeDtypeStruct(v.shape, v.dtype, sharding=v.sharding)
        for k, v in params.split.items()
    }
    try:
        return jax.jit(sharded).lower(param_shapes, *shapes), split
    except NetworkError:
        raise
    except Exception as exc:
        raise NetworkError(
            f"{converter.source}: lowering for batch size {rows} split over {n} "
            f"devices failed: {type(exc).__name__}: {exc}"
        ) from exc


class Executable:
    """One compiled batch size. ``rows``: the batch it takes (``batch_size`` rounded up to a
    multiple of the device count when split); ``devices``: how many devices share one call.
    An unsplit size has one program per device (``copies``): a call names the device it runs
    on, so that concurrent calls keep every core busy."""

    def __init__(
        self,
        compiled: list,
        params: list[dict[str, Any]],
        rows: int,
        devices: int,
        input_sharding=None,
    ) -> None:
        self.programs, self.params, self.rows, self.devices = compiled, params, rows, devices
        self.input_sharding = input_sharding
        self.first_run_done = False
        """Whether each program ran once (:meth:`backend_xla.buckets.Buckets._first_run`)."""
        self.inputs: list[tuple[tuple[int, ...], np.dtype]] = [
            ((rows, 112, 8, 8), np.dtype(np.float32))
        ]
        """Shape and dtype of each input the program takes (set by :func:`compile_function`):
        the planes, or a packed network's masks and values."""

    @property
    def copies(self) -> int:
        return len(self.programs)

    def __call__(self, *inputs: np.ndarray, copy: int = 0):
        if self.input_sharding is not None:
            import jax

            inputs = tuple(jax.device_put(x, self.input_sharding) for x in inputs)
        return self.programs[copy](self.params[copy], *inputs)

    def zero_inputs(self) -> list[np.ndarray]:
        """An all-zero batch of the program's inputs."""
        return [np.zeros(shape, dtype) for shape, dtype in self.inputs]

    def zero_run(self, copy: int = 0) -> list[np.ndarray]:
        """The outputs of copy ``copy`` for an all-zero batch (a program's first run; the check of
        a cached program against the one it was stored from)."""
        return [np.asarray(r) for r in self(*self.zero_inputs(), copy=copy)]


def dump_hlo(lowered, directory: str, source: str, batch_size: int) -> Path:
    """Write the HLO module proto of one batch size to ``directory`` (lc0's XLA backend option
    ``hlo_proto_dump_dir``), as ``<network>-batch<N>.hlo.pb``; returns the file."""
    folder = Path(directory).expanduser()
    stem = Path(source).name.split(".")[0] or "network"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{stem}-batch{batch_size}.hlo.pb"
        path.write_bytes(lowered.compiler_ir("hlo").as_serialized_hlo_module_proto())
    except OSError as exc:
        raise OptionError(
            f"backend option hlo_proto_dump_dir: cannot write to {directory!r}: "
            f"{exc.strerror or exc}"
        ) from None
    return path


SPLIT_WINOGRAD_OPTIONS: dict[str, Any] = {
    "xla_cpu_experimental_ynn_fusion_type": "",
    "xla_cpu_multi_thread_eigen": False,
}
"""XLA options of a CPU program that splits a batch over host devices and runs Winograd: its
batched products as XLA's own single-threaded loops, not YNNPACK fusions. The devices' programs
run at once, and YNNPACK spread each product over XLA's intra-op thread pool, which all host
devices share: on the 2-core host Maia-1100 split over 2 devices ran 2,900-3,000 positions/s at
batch 128-256, while two processes pinned one to each core ran 2,400 each. With these options
the split program ran 4,100-4,260 (1.12-1.20× onnxruntime on both cores), at batch 32 1.05× the
default; one-device programs keep the default, where YNNPACK is faster (docs/performance.md §6.6)."""


def executable_cache():
    """The engine's cache of whole executables (:mod:`backend_xla.exec_cache`), in the folder of
    JAX's persistent cache; None where that cache is off (``cache_dir=none``) or unwritable."""
    if _cache_dir is None:
        return None
    from .exec_cache import SUBDIR, ExecutableCache

    return ExecutableCache(Path(_cache_dir) / SUBDIR)


def compile_function(
    converter,
    batch_size: int,
    params: device_split.Params,
    min_rows_per_device: int = SPLIT_MIN_ROWS,
    hlo_dump_dir: str | None = None,
    copies: int = 1,
    cache=None,
    cache_key: str | None = None,
) -> Executable:
    """Compile the network for ``batch_size``: split over the devices of ``params`` when
    :func:`backend_xla.devices.split_rows` says so, else one program on each of the first
    ``copies`` devices (a batch runs whole on one of them). With ``hlo_dump_dir``, the HLO is
    written there first (:func:`dump_hlo`). With ``cache`` (an
    :class:`backend_xla.exec_cache.ExecutableCache`) and ``cache_key``
    (:func:`backend_xla.exec_cache.entry_key`), the programs are loaded from the cache where it
    holds them, and stored there after a compile."""
    use_cache = cache is not None and cache_key is not None and not hlo_dump_dir
    if use_cache:
        shell = _placed(converter, batch_size, params, min_rows_per_device, copies)
        if cache.load(cache_key, shell, params.devices):
            _report("executables_serialized", True)
            return shell
    executable = _compile_executable(
        converter, batch_size, params, min_rows_per_device, hlo_dump_dir, copies
    )
    executable.inputs = _inputs(converter, executable.rows)
    if use_cache:
        stored = cache.store(cache_key, executable, params.devices)
        if not stored:
            # Read from JAX's own cache, the programs do not serialize whole: compile them afresh.
            with _without_jax_cache():
                fresh = _compile_executable(
                    converter, batch_size, params, min_rows_per_device, None, copies
                )
            fresh.inputs = executable.inputs
            stored = cache.store(cache_key, fresh, params.devices)
            if stored:
                executable = fresh
        _report("executables_serialized", stored if stored or not cache.unwritable else None)
    return executable


_bypass_lock = threading.Lock()


@contextlib.contextmanager
def _without_jax_cache():
    """Compile without JAX's persistent cache (neither read nor written): a program JAX read from
    it does not serialize whole (:mod:`backend_xla.exec_cache`). JAX has no public switch once
    its cache is on (it decides once a process), so this sets the module's decision for the time
    of the compile, restored after; compiles on other threads meanwhile skip the cache too. Where
    JAX's internals differ, nothing changes (the program then is not stored)."""
    try:
        from jax._src import compilation_cache as cc

        saved = (cc._cache_checked, cc._cache_used)
    except (ImportError, AttributeError):
        _report("jax_cache_bypass", False)
        yield
        return
    _report("jax_cache_bypass", True)
    with _bypass_lock:
        cc._cache_checked, cc._cache_used = True, False
        try:
            yield
        finally:
            cc._cache_checked, cc._cache_used = saved


def _placed(converter, batch_size, params, min_rows_per_device, copies) -> Executable:
    """An :class:`Executable` without programs, its parameters, rows and placement as
    :func:`_compile_executable` would give them (for programs loaded from a cache)."""
    n = len(params.devices)
    rows = device_split.split_rows(batch_size, n, min_rows_per_device)
    if rows is not None:
        assert params.split is not None
        shell = Executable([], [params.split], rows, n, device_split.batch_sharding(params.devices))
    else:
        placed = [params.on_device(i) for i in range(len(params.devices[: max(1, copies)]))]
        shell = Executable([], placed, batch_size, 1)
    shell.inputs = _inputs(converter, shell.rows)
    return shell


def _inputs(converter, rows: int) -> list[tuple[tuple[int, ...], np.dtype]]:
    return [(tuple(s.shape), np.dtype(s.dtype)) for s in converter.input_specs(rows)]


def _compile_executable(
    converter, batch_size, params, min_rows_per_device, hlo_dump_dir, copies
) -> Executable:
    import jax

    n = len(params.devices)
    rows = device_split.split_rows(batch_size, n, min_rows_per_device)
    if rows is not None:
        assert params.split is not None  # rows only for several devices, which have a split copy
        with jax.default_device(params.devices[0]):
            lowered, sharding = _lower_split(converter, rows, params)
            if hlo_dump_dir:
                dump_hlo(lowered, hlo_dump_dir, converter.source, batch_size)
            options = (
                SPLIT_WINOGRAD_OPTIONS
                if params.devices[0].platform == "cpu" and converter.winograd_batch(rows // n)
                else None
            )
            return Executable(
                [_compile(converter, lowered, batch_size, options)],
                [params.split],
                rows,
                n,
                sharding,
            )
    programs, placed = [], []
    for i, device in enumerate(params.devices[: max(1, copies)]):
        on_device = params.on_device(i)
        with jax.default_device(device):
            # One device: placed by the default device alone, as a plain jit would be.
            lowered = lower(
                converter,
                batch_size,
                on_device,
                hwio_filters=True,
                device=device if n > 1 else None,
            )
            if hlo_dump_dir and i == 0:
                dump_hlo(lowered, hlo_dump_dir, converter.source, batch_size)
            programs.append(_compile(converter, lowered, batch_size))
        placed.append(on_device)
    return Executable(programs, placed, batch_size, 1)


COMPILE_CORES_ENV = "XLAZERO_XLA_COMPILE_CORES"
"""Set to ``all`` to let XLA compile with every core in view (its loop fusions then cut into
parallel tasks): the test processes do, where two of them keep both cores busy and no program's
speed is measured; a test checks the default."""
CODEGEN_THREADS = "llvm-worker"
"""XLA's code-generation threads (after the fusions are cut, or not): left on every core, so that
compiling keeps its parallel code generation (a process's first compile starts them on one)."""


def _thread_name(tid: str) -> str:
    try:
        with open(f"/proc/self/task/{tid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


_pin_lock = threading.Lock()
_pinned_compiles = 0
"""How many compiles are inside :func:`_xla_threads_on_one_core` now: the first pins XLA's
threads, the last gives them their cores back (a background compile and one the search asked
for may overlap)."""


@contextlib.contextmanager
def _xla_threads_on_one_core():
    """While XLA compiles, its own threads (every thread of the process that Python did not
    start) may run on one core only, where the OS allows it; then they get their cores back.

    Why: XLA's CPU compiler cuts each large loop fusion into as many parallel tasks as the
    compiling thread may use cores. With one host device per core that only moves work between
    cores: Maia-1100 in batches of 7 (51 of its loop fusions cut in two) kept 1.35 cores busy for
    1,750-1,900 positions/s on one stream and ran 3,170-3,320 on two (the engine's two batches
    in flight); compiled with one core in view, 2,190-2,250 on 1.05 cores and 4,190 on two
    (docs/performance.md §6.7). XLA has no option for it; the count is read from the thread's
    CPU affinity.
    """
    import jax

    # On an accelerator the cut loop fusions are not XLA's CPU programs' concern, and its
    # compiler (PTX assembly, autotuning) wants every core.
    if os.environ.get(COMPILE_CORES_ENV) == "all" or jax.default_backend() != "cpu":
        yield
        return
    try:
        allowed = os.sched_getaffinity(0)
    except (AttributeError, OSError):
        yield
        return
    if len(allowed) < 2:
        yield
        return
    global _pinned_compiles
    with _pin_lock:
        if _pinned_compiles == 0:
            _report("xla_threads_pinned", _set_xla_threads({min(allowed)}, True) > 0)
        _pinned_compiles += 1
    try:
        yield
    finally:
        with _pin_lock:
            _pinned_compiles -= 1
            if _pinned_compiles == 0:  # those XLA started meanwhile too
                _set_xla_threads(allowed, skip_codegen=False)
                _report("xla_codegen_threads_named", _codegen_threads() > 0)


def _codegen_threads() -> int:
    """How many of this process's threads are XLA's code-generation threads, by their name."""
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return 0
    return sum(_thread_name(tid).startswith(CODEGEN_THREADS) for tid in tids)


def _set_xla_threads(cores: set[int], skip_codegen: bool) -> int:
    """Set the CPU affinity of every thread of this process that Python did not start; returns
    how many were set."""
    python = {t.native_id for t in threading.enumerate()}
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return 0
    count = 0
    for tid in tids:
        if tid in python or (skip_codegen and _thread_name(str(tid)).startswith(CODEGEN_THREADS)):
            continue
        try:
            os.sched_setaffinity(tid, cores)
            count += 1
        except OSError:
            pass  # a thread that ended meanwhile
    return count


def _compile(converter, lowered, batch_size: int, options: Mapping[str, Any] | None = None):
    try:
        with _xla_threads_on_one_core():
            return lowered.compile(options)
    except Exception as exc:
        raise NetworkError(
            f"{converter.source}: compiling batch size {batch_size} failed: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
