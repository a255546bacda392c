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

    Only acts when the user has not set ``XLA_FLAGS`` at all (their setting always wins) and jax has
    not been imported yet. ``extra_flags`` are appended in the same case (e.g. XLA CPU tuning flags).
    Returns True when ``XLA_FLAGS`` was set by this call.
    """
    if "XLA_FLAGS" in os.environ or "jax" in sys.modules:
        return False
    n = usable_cores() if n is None else n
    flags = [f"{DEVICE_COUNT_FLAG}={n}"] if n > 1 else []
    flags += list(extra_flags)
    if not flags:
        return False
    os.environ["XLA_FLAGS"] = " ".join(flags)
    return True


def batch_sharded(fn: Callable[..., Any], *, devices: list | None = None,
                  static_argnums: tuple[int, ...] = ()) -> Callable[..., Any]:
    """``jax.jit(fn)`` whose array arguments and outputs are split along axis 0 across devices.

    Every positional array argument and every output leaf must have the batch as axis 0. The batch
    is zero-padded up to a multiple of the device count (rows are independent in an inference net,
    so padding rows never affect real rows) and the padding is cut off the outputs. With a single
    device this is just ``jax.jit(fn)``.
    """
    import jax
    import jax.numpy as jnp
    import numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec

    devices = list(devices) if devices is not None else jax.local_devices()
    jitted_plain = jax.jit(fn, static_argnums=static_argnums)
    if len(devices) == 1:
        return jitted_plain
    mesh = Mesh(np.array(devices), ("batch",))
    split = NamedSharding(mesh, PartitionSpec("batch"))
    jitted = jax.jit(fn, static_argnums=static_argnums, out_shardings=split)
    n_dev = len(devices)

    def run(*args):
        batch = next(a.shape[0] for i, a in enumerate(args) if i not in static_argnums)
        padded = -(-batch // n_dev) * n_dev
        placed = []
        for i, a in enumerate(args):
            if i in static_argnums:
                placed.append(a)
                continue
            if padded != batch:
                a = jnp.pad(jnp.asarray(a), [(0, padded - batch)] + [(0, 0)] * (a.ndim - 1))
            placed.append(jax.device_put(a, split))
        out = jitted(*placed)
        if padded != batch:
            out = jax.tree_util.tree_map(lambda o: o[:batch], out)
        return out

    return run
