"""Run a jitted network with its batch split across all local CPU devices.

Why: XLA's CPU runtime executes one program largely on one thread (convolutions and elementwise
loops are single-threaded; only large dots use the intra-op pool). Exposing each core as its own
"host device" and splitting the batch across them runs the copies concurrently, one per core.

The catch: the number of host devices is fixed when XLA's CPU client is created, from the flag
``--xla_force_host_platform_device_count=N`` in ``XLA_FLAGS``. :func:`configure_host_devices` must
therefore run BEFORE the first ``import jax`` anywhere in the process (in practice: at the very top
of the entry script, e.g. ``bin/xlazero``, before importing the engine). Once jax is imported the
setting can no longer change, and the function only reports what it would have done.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

DEVICE_COUNT_FLAG = "--xla_force_host_platform_device_count"


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
"""The XLA_FLAGS value an earlier call set (``import backend_xla`` makes one): a later call may
replace it, since it is not the user's."""


MIN_ROWS_PER_DEVICE = 8  # below this the split costs more than it saves (batch 1: 5× slower)


def batch_sharded(fn: Callable[..., Any], *, devices: list | None = None,
                  min_rows_per_device: int = MIN_ROWS_PER_DEVICE) -> Callable[..., Any]:
    """``jax.jit(fn)`` with every argument and output split along axis 0 across ``devices``.

    ``fn(*arrays)`` must treat batch rows independently (an inference network does): it is run by
    ``jax.shard_map`` on each device's slice of the batch, with no communication, so whatever it
    does per chunk (e.g. a ``lax.map`` over micro-batches) stays local to that device. Every
    argument and every output leaf must have the batch as axis 0 (bind other parameters with
    ``functools.partial`` first). The batch is zero-padded up to a multiple of the device count
    and the padding is cut off the outputs. With one device, or fewer than
    ``min_rows_per_device`` rows per device, it runs as plain ``jax.jit(fn)`` on the first device.

    (Plain ``jax.jit`` on ``NamedSharding``-placed inputs computes the same thing, but the SPMD
    partitioner may reshard reshapes of the batch axis; it measured 2× slower on a micro-batched
    network, see docs/performance.md.)
    """
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = list(devices) if devices is not None else jax.local_devices()
    if len(devices) == 1:
        return jax.jit(fn)
    mesh = Mesh(np.array(devices), ("batch",))
    split = NamedSharding(mesh, PartitionSpec("batch"))
    n_dev = len(devices)
    jitted = jax.jit(jax.shard_map(fn, mesh=mesh, in_specs=PartitionSpec("batch"),
                                   out_specs=PartitionSpec("batch"), check_vma=False))

    unsplit = jax.jit(fn)

    def run(*args):
        batch = args[0].shape[0]
        if batch < min_rows_per_device * n_dev:
            return unsplit(*args)
        padded = -(-batch // n_dev) * n_dev
        placed = []
        for a in args:
            if padded != batch:
                a = jnp.pad(jnp.asarray(a), [(0, padded - batch)] + [(0, 0)] * (a.ndim - 1))
            placed.append(jax.device_put(a, split))
        out = jitted(*placed)
        if padded != batch:
            out = jax.tree_util.tree_map(lambda o: o[:batch], out)
        return out

    return run
