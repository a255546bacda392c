"""How a network's batch is split over its devices, and its parameters placed on them (stage 4 of
a load, :func:`backend_xla.load_network`).

Why split: XLA's CPU runtime executes one program largely on one thread (convolutions and
element-wise loops are single-threaded; only large dots use the intra-op pool). Exposing each
core as its own "host device" and splitting the batch across them runs the copies concurrently,
one per core (docs/performance.md).

The catch: the number of host devices is fixed when XLA's CPU client is created, from the flag
``--xla_force_host_platform_device_count=N`` in ``XLA_FLAGS``. :func:`configure_host_devices` must
therefore run BEFORE the first ``import jax`` anywhere in the process (the process's set-up,
:func:`engine.startup.configure`, calls it; importing ``backend_xla`` does not). Once jax is imported the
setting can no longer change, and the function only reports what it would have done. Nothing in
this module imports jax at import time.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable
from typing import Any

from .options import SPLIT_MIN_ROWS

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"
BATCH_AXIS = "batch"


# ----------------------------------------------------------------------------- host devices


def usable_cores() -> int:
    """CPU cores this process may run on (affinity mask aware)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def configure_host_devices(n: int | None = None, *, extra_flags: tuple[str, ...] = ()) -> bool:
    """Ask XLA for ``n`` (default: one per usable core) CPU devices; call before ``import jax``.

    A user's own ``XLA_FLAGS`` are kept and ours are added after them, unless they already set
    the device count (their setting wins). A value an earlier call of this function set may be
    replaced. Nothing happens once jax is imported. ``extra_flags`` are added in the same way
    (e.g. XLA CPU tuning flags). Returns True when ``XLA_FLAGS`` was set by this call.
    """
    global _flags_set_here, _user_part
    if "jax" in sys.modules:
        return False
    current = os.environ.get("XLA_FLAGS")
    ours_before = current is not None and current == _flags_set_here
    user = _user_part if ours_before else (current or "")
    if DEVICE_COUNT_FLAG in user:
        return False  # the user chose the device count
    n = usable_cores() if n is None else n
    flags = [f"{DEVICE_COUNT_FLAG}={n}"] if n > 1 else []
    flags += list(extra_flags)
    if not flags:
        if ours_before:  # an earlier call's value, now asked for one device: the user's alone
            if user:
                os.environ["XLA_FLAGS"] = user
            else:
                del os.environ["XLA_FLAGS"]
            _flags_set_here = None
        return False
    _user_part = user
    os.environ["XLA_FLAGS"] = _flags_set_here = " ".join(([user] if user else []) + flags)
    return True


_user_part = ""
"""The user's own XLA_FLAGS, kept in front of the flags an earlier call added."""

_flags_set_here: str | None = None
"""The XLA_FLAGS value an earlier call set (``engine.startup.configure`` makes one): a later call
may replace it, since it is not the user's."""


# ----------------------------------------------------------------------------- parameters


class Params:
    """The large initializers, uploaded once: ``split``, replicated over the split devices (one
    copy each, ONNX filter layout) and ``single``, for programs that run on the first device
    (conv filters HWIO, see ``onnx_passes.ConvFilters``; the other parameters are the
    first device's copy of ``split``, not uploaded twice). ``on_device(i)`` is the same for
    device i: unsplit batches run on any free device, several at once."""

    def __init__(self, converter, devices: list) -> None:
        import jax

        self.devices = devices
        self.split: dict[str, Any] | None = None
        self._per_device: list[dict[str, Any] | None]
        self._hwio = converter.params_for(hwio_filters=True)
        self._hwio_names = converter.hwio_weights
        if len(devices) == 1:
            self.single = {k: jax.device_put(v, devices[0]) for k, v in self._hwio.items()}
            self._per_device = [self.single]
            return
        copies = replicated(devices)
        self.split = {
            k: jax.device_put(v, copies)
            for k, v in converter.params_for(hwio_filters=False).items()
        }
        self._per_device = [None] * len(devices)
        self.single = self.on_device(0)

    def on_device(self, i: int) -> dict[str, Any]:
        """The parameters of an unsplit program on device ``i`` (uploaded on first use)."""
        params = self._per_device[i]
        if params is None:
            import jax

            assert self.split is not None  # one device: _per_device holds ``single``
            device = self.devices[i]
            params = {
                k: jax.device_put(self._hwio[k], device)
                if k in self._hwio_names
                else next(s.data for s in v.addressable_shards if s.device == device)
                for k, v in self.split.items()
            }
            self._per_device[i] = params
        return params


def upload(converter, devices) -> Params:
    """Put the large initializers on the device(s) once; every batch size shares them."""
    return Params(converter, list(devices) if isinstance(devices, (list, tuple)) else [devices])


# ----------------------------------------------------------------------------- batch split


def split_rows(
    batch_size: int, n_devices: int, min_rows_per_device: int = SPLIT_MIN_ROWS
) -> int | None:
    """Rows a batch of ``batch_size`` is padded to when split over ``n_devices`` (a multiple of
    it), or None when it runs on one device: below ``min_rows_per_device`` rows per device the
    split costs more than it saves (measured: docs/backend.md, Speed)."""
    if n_devices > 1 and batch_size >= min_rows_per_device * n_devices:
        return -(-batch_size // n_devices) * n_devices
    return None


def mesh(devices: list):
    import numpy as np
    from jax.sharding import Mesh

    return Mesh(np.array(devices), (BATCH_AXIS,))


def batch_sharding(devices: list):
    """Placement of an array split on axis 0 over ``devices``."""
    from jax.sharding import NamedSharding, PartitionSpec

    return NamedSharding(mesh(devices), PartitionSpec(BATCH_AXIS))


def replicated(devices: list):
    """Placement of an array copied whole to every one of ``devices``."""
    from jax.sharding import NamedSharding, PartitionSpec

    return NamedSharding(mesh(devices), PartitionSpec())


def shard_batch(fn: Callable[..., Any], devices: list, n_split: int, n_replicated: int = 0):
    """``fn`` under ``jax.shard_map`` over ``devices``, the devices never communicating: its first
    ``n_replicated`` arguments whole on each device, the next ``n_split`` and every output split
    on axis 0. ``fn`` sees one device's rows, so whatever it does per chunk stays local.

    (Plain ``jax.jit`` on ``NamedSharding``-placed inputs computes the same thing, but the SPMD
    partitioner may reshard reshapes of the batch axis; it measured 2× slower on a micro-batched
    network, see docs/performance.md.)
    """
    import jax
    from jax.sharding import PartitionSpec

    batch = PartitionSpec(BATCH_AXIS)
    return jax.shard_map(
        fn,
        mesh=mesh(devices),
        in_specs=(PartitionSpec(),) * n_replicated + (batch,) * n_split,
        out_specs=batch,
        check_vma=False,
    )


def batch_sharded(
    fn: Callable[..., Any],
    *,
    devices: list | None = None,
    min_rows_per_device: int = SPLIT_MIN_ROWS,
) -> Callable[..., Any]:
    """``fn(*arrays)`` jitted, with every argument and output split along axis 0 over ``devices``
    (default: every local device) as the backend splits a network (:func:`shard_batch`).

    For a function of batch rows only (the benchmarks' hand-built networks; bind other
    parameters with ``functools.partial`` first). The batch is zero-padded up to a multiple of
    the device count and the padding cut off the outputs; batches :func:`split_rows` keeps
    whole run as plain ``jax.jit(fn)`` on the first device.
    """
    import jax
    import jax.numpy as jnp

    devices = list(devices) if devices is not None else jax.local_devices()
    unsplit = jax.jit(fn)
    if len(devices) == 1:
        return unsplit
    split = batch_sharding(devices)

    @functools.cache
    def program(n_args: int):
        return jax.jit(shard_batch(fn, devices, n_args))

    def run(*args):
        batch = args[0].shape[0]
        padded = split_rows(batch, len(devices), min_rows_per_device)
        if padded is None:
            return unsplit(*args)
        placed = []
        for a in args:
            if padded != batch:
                a = jnp.pad(jnp.asarray(a), [(0, padded - batch)] + [(0, 0)] * (a.ndim - 1))
            placed.append(jax.device_put(a, split))
        out = program(len(args))(*placed)
        if padded != batch:
            out = jax.tree_util.tree_map(lambda o: o[:batch], out)
        return out

    return run
