"""backend_xla.devices: XLA_FLAGS set-up before jax starts, and batch-split execution equal to
unsharded execution. Both need a fresh interpreter (the device count is fixed once jax starts), so
they run small scripts in subprocesses."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from conftest import REPO_ROOT

CHILD_TIMEOUT_S = 120
SUM_RTOL = 1e-5  # a 512-term f32 sum may be reassociated differently per program


def _run(code: str, env_extra: dict[str, str] | None = None, drop_xla_flags: bool = True) -> str:
    env = {k: v for k, v in os.environ.items() if not (drop_xla_flags and k == "XLA_FLAGS")}
    env.update(env_extra or {})
    env["PYTHONPATH"] = str(REPO_ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=CHILD_TIMEOUT_S)
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.strip().splitlines()[-1]


# {pre} comes first: a first configure_host_devices() (the set-up, engine/startup/, makes one per
# core) may be overridden by a later explicit call as long as jax has not started.
CONFIGURE = """
import json, os, sys
{pre}
from backend_xla.devices import configure_host_devices
changed = configure_host_devices(3)
import jax
print(json.dumps([changed, os.environ.get("XLA_FLAGS"), jax.local_device_count()]))
"""


def test_configure_sets_device_count_before_jax():
    changed, flags, count = json.loads(_run(CONFIGURE.format(pre="")))
    assert changed and flags == "--xla_force_host_platform_device_count=3" and count == 3


def test_configure_merges_user_xla_flags_and_keeps_their_device_count():
    user = "--xla_cpu_use_thunk_runtime=true"
    changed, flags, count = json.loads(_run(CONFIGURE.format(pre=""), {"XLA_FLAGS": user}, False))
    assert changed and flags == f"{user} --xla_force_host_platform_device_count=3" and count == 3
    own = "--xla_force_host_platform_device_count=1"
    changed, flags, count = json.loads(_run(CONFIGURE.format(pre=""), {"XLA_FLAGS": own}, False))
    assert not changed and flags == own and count == 1


def test_configure_is_a_no_op_once_jax_is_imported():
    changed, flags, count = json.loads(_run(CONFIGURE.format(pre="import jax")))
    assert not changed and flags is None and count == 1


SHARDED = """
import json
import numpy as np
from backend_xla.devices import configure_host_devices, batch_sharded
assert configure_host_devices(2)
import jax, jax.numpy as jnp
from backend_xla.ops.conv_methods import conv2d
rng = np.random.default_rng(0)
w = rng.standard_normal((8, 4, 3, 3)).astype(np.float32)

def net(x):  # conv + per-row reduction, micro-batched inside like the Maia forward pass
    chunk = lambda c: conv2d(c, w, pads=[1, 1, 1, 1], method="im2col", activation="relu")
    y = jax.lax.map(chunk, x.reshape(-1, 1, *x.shape[1:])).reshape(x.shape[0], 8, 8, 8)
    return y, y.sum(axis=(1, 2, 3))

errs = []
for n in (1, 5, 8):  # odd sizes exercise the padding to a multiple of the device count
    x = rng.standard_normal((n, 4, 8, 8)).astype(np.float32)
    want = jax.jit(net)(x)
    got = batch_sharded(net, min_rows_per_device=1)(x)
    errs.append([n, got[0].shape[0], float(jnp.abs(got[0] - want[0]).max()),
                 float(jnp.abs(got[1] - want[1]).max() / jnp.abs(want[1]).max()),
                 len(got[0].sharding.device_set)])
small = batch_sharded(net)(rng.standard_normal((4, 4, 8, 8)).astype(np.float32))
print(json.dumps([jax.local_device_count(), errs, len(small[0].sharding.device_set)]))
"""


def test_batch_sharded_equals_unsharded():
    count, errs, small_devices = json.loads(_run(SHARDED))
    assert count == 2
    for n, rows, e_y, e_sum, n_dev in errs:
        assert rows == n and e_y == 0.0 and e_sum < SUM_RTOL, (n, e_y, e_sum)
    assert errs[-1][-1] == 2  # the even batch really lives on both devices
    assert small_devices == 1  # below min_rows_per_device the batch stays on one device


RUNTIME_ONLY = """
import json, sys
import numpy as np
import backend_xla
net = backend_xla.load_network(sys.argv[1], "batch_buckets=1;16,cache_dir=none,background_compile=0,"
                               "conv_method=winograd2")
out = net.evaluate(np.zeros((16, 112, 8, 8), np.float32))
print(json.dumps([len(net.devices), list(out.policy.shape),
                  sorted(m for m in sys.modules if m.startswith("xlazero_perf"))]))
"""


def test_loading_and_running_a_network_never_imports_the_benchmarks():
    """bin/xlazero_perf is benchmark code, outside the installed packages: converting (with a
    conv_method formulation), compiling one-device and split programs and evaluating must not
    need it (with the repository alone on the path, importing it would fail)."""
    from conftest import need_shared

    net = need_shared("zoo", "se-b2f32-polconv-wdl-input3-canonical.onnx")
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["PYTHONPATH"] = str(REPO_ROOT)
    env["XLA_FLAGS"] = "--xla_force_host_platform_device_count=2"
    out = subprocess.run([sys.executable, "-c", RUNTIME_ONLY, str(net)], env=env,
                         capture_output=True, text=True, timeout=CHILD_TIMEOUT_S)
    assert out.returncode == 0, out.stderr[-2000:]
    devices, shape, perf_modules = json.loads(out.stdout.strip().splitlines()[-1])
    assert devices == 2 and shape == [16, 1858]
    assert perf_modules == [], f"expected no xlazero_perf module loaded, got {perf_modules}"
