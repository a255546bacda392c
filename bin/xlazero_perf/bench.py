"""Benchmarks behind ``bin/perf/convbench`` (tables for docs/performance.md).

Every table is measured round-robin in one process (see :mod:`xlazero_perf.timing`) with a
reference in the same run — the f32 matmul peak for conv tables, onnxruntime for network tables —
because the machine is shared and absolute numbers drift by 2× between runs.

The ``flags`` table needs one process per XLA flag setting (flags are read once, when jax starts),
so it re-runs ``bin/perf/convbench net`` in subprocesses and reports each result relative to
onnxruntime measured in that same subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAIA = Path(__file__).resolve().parents[2].parent / "shared" / "lc0" / "maia" / "maia-1100.onnx"
CONV_METHODS = ("lax", "im2col", "im2row", "shifted", "winograd2", "winograd4")
# Whole-network variants: name → make_forward keyword arguments.
NET_VARIANTS: dict[str, dict[str, Any]] = {
    "lax/NCHW (op-by-op)": dict(method="lax", layout="NCHW"),
    "lax/NHWC": dict(method="lax"),
    "im2col/NHWC": dict(method="im2col"),
    "im2row/NHWC": dict(method="im2row"),
    "winograd4/NHWC": dict(method="winograd4"),
    "im2col/NHWC/mb32": dict(method="im2col", micro_batch=32),
    "winograd4/NHWC/mb32": dict(method="winograd4", micro_batch=32),
}


def _print_table(title: str, header: list[str], rows: list[list[str]]) -> None:
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


def conv_table(batches=(1, 32, 256), cins=(64, 112), dtypes=("f32", "bf16"), rounds=5) -> None:
    """GFLOP/s of each formulation of a 3×3/pad 1 conv to 64 channels on 8×8 boards."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from backend_xla.ops.conv_methods import conv2d
    from .conv import conv_flops
    from .timing import matmul_peak_gflops, time_round_robin

    peak = matmul_peak_gflops()
    print(f"f32 matmul peak (2048² @ 2048², jit): {peak:.0f} GFLOP/s")
    rng = np.random.default_rng(0)
    header = (
        ["batch", "Cin", "dtype"]
        + [f"{m} NCHW" if m == "lax" else m for m in CONV_METHODS]
        + ["lax NHWC", "lax NHWC no bias/relu", "best / peak"]
    )
    rows = []
    for dt_name in dtypes:
        dt = jnp.float32 if dt_name == "f32" else jnp.bfloat16
        for n in batches:
            for cin in cins:
                xh = jnp.asarray(rng.standard_normal((n, 8, 8, cin)), dt)
                xc = jnp.transpose(xh, (0, 3, 1, 2))
                w = (rng.standard_normal((64, cin, 3, 3)) * 0.1).astype(np.float32)
                b = rng.standard_normal(64).astype(np.float32)
                fns: dict[str, Callable[..., object]] = {}
                for m in CONV_METHODS:
                    lay, x = ("NCHW", xc) if m == "lax" else ("NHWC", xh)
                    f = jax.jit(
                        lambda x, m=m, lay=lay, w=w, b=b: conv2d(
                            x, w, b, pads=[1] * 4, method=m, layout=lay, activation="relu"
                        )
                    )
                    fns[m] = lambda f=f, x=x: f(x)
                f = jax.jit(
                    lambda x, w=w, b=b: conv2d(
                        x, w, b, pads=[1] * 4, method="lax", layout="NHWC", activation="relu"
                    )
                )
                fns["lax NHWC"] = lambda f=f, xh=xh: f(xh)
                f = jax.jit(lambda x, w=w: conv2d(x, w, pads=[1] * 4, method="lax", layout="NHWC"))
                fns["lax NHWC bare"] = lambda f=f, xh=xh: f(xh)
                t = time_round_robin(fns, rounds=rounds, min_time_s=0.03)
                flops = conv_flops(n, cin, 64, 8, 8)
                g = {k: flops / v / 1e9 for k, v in t.items()}
                best = max(g, key=lambda k: g[k])
                rows.append(
                    [str(n), str(cin), dt_name]
                    + [f"{g[k]:.0f}" for k in fns]
                    + [f"{g[best] / peak:.2f} ({best})"]
                )
    _print_table(
        "3×3 conv → 64 channels, 8×8 boards, + bias + ReLU; GFLOP/s of direct-conv FLOPs "
        "(Winograd counts the FLOPs it avoids)",
        header,
        rows,
    )


def net_table(
    batches=(1, 32, 256), variants=None, devices=(1, "all"), rounds=5, json_out: bool = False
) -> dict:
    """Positions/s of the hand-built Maia-1100 forward pass vs onnxruntime, same process."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from backend_xla.devices import batch_sharded
    from .maia import load_maia, make_forward
    from .timing import time_round_robin

    try:
        import onnxruntime as ort
    except ImportError:  # benchmark-only peer dependency
        ort = None
    wt = load_maia(str(MAIA))
    variants = variants or list(NET_VARIANTS)
    sess = None
    if ort is not None:
        so = ort.SessionOptions()
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(str(MAIA), so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(0)
    n_all = jax.local_device_count()
    dev_counts = sorted({n_all if d == "all" else int(d) for d in devices})
    results: dict = {"xla_flags": os.environ.get("XLA_FLAGS", ""), "devices": n_all, "rows": {}}
    header = ["batch"] + (["onnxruntime"] if sess else [])
    rows = []
    for n in batches:
        x = (rng.random((n, 112, 8, 8)) < 0.3).astype(np.float32)
        xj = jnp.asarray(x)
        fns: dict[str, Callable[..., object]] = {}
        if sess:
            ref_p, ref_w = sess.run(None, {"/input/planes": x})
            fns["onnxruntime"] = lambda x=x: sess.run(None, {"/input/planes": x})
        for name in variants:
            for d in dev_counts:
                f = batch_sharded(
                    make_forward(wt, **NET_VARIANTS[name]), devices=jax.local_devices()[:d]
                )
                p, w = f(xj)
                if sess:  # never time a wrong network
                    err = float(np.abs(np.asarray(p) - ref_p).max())
                    assert err < 1e-3, f"{name}: policy differs from onnxruntime by {err}"
                fns[f"{name} ×{d}dev"] = lambda f=f, xj=xj: f(xj)
        t = time_round_robin(fns, rounds=rounds, min_time_s=0.2)
        pos = {k: n / v for k, v in t.items()}
        results["rows"][n] = pos
        if len(header) == 1 + bool(sess):
            header += [k for k in fns if k != "onnxruntime"]
        ort_rate = pos.get("onnxruntime")
        rows.append(
            [str(n)]
            + [
                f"{pos[k]:.0f}"
                + (f" ({pos[k] / ort_rate:.2f}×)" if ort_rate and k != "onnxruntime" else "")
                for k in fns
            ]
        )
    if json_out:
        print("JSON " + json.dumps(results))
    else:
        _print_table(
            f"Maia-1100 positions/s (ratio to onnxruntime in the same run); "
            f"XLA_FLAGS={results['xla_flags']!r}",
            header,
            rows,
        )
    return results


def flags_table(flag_sets: list[str], batch: int = 256, variants=None, repeats: int = 2) -> None:
    """Run ``net`` once per XLA_FLAGS setting (alternating, ``repeats`` times) in subprocesses."""
    script = Path(__file__).resolve().parents[2] / "bin" / "perf" / "convbench"
    variants = variants or ["lax/NHWC", "winograd4/NHWC", "im2col/NHWC/mb32"]
    rows = []
    header = ["XLA_FLAGS", "run"] + [f"{v} ×{d}" for v in variants for d in ("1dev", "all")]
    for r in range(repeats):
        for flags in flag_sets:
            env = dict(os.environ, XLA_FLAGS=flags)
            cmd = [
                sys.executable,
                str(script),
                "net",
                "--json",
                "--batches",
                str(batch),
                "--variants",
                ",".join(variants),
            ]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
            line = next((l for l in out.stdout.splitlines() if l.startswith("JSON ")), None)
            if line is None:
                rows.append([f"`{flags}`", str(r), "failed: " + out.stderr.strip()[-200:]])
                continue
            res = json.loads(line[5:])["rows"][str(batch)]
            ort_rate = res["onnxruntime"]
            cells = []
            for k in [k for k in res if k != "onnxruntime"]:
                cells.append(f"{res[k]:.0f} ({res[k] / ort_rate:.2f}×)")
            rows.append([f"`{flags}`", f"{r} (ort {ort_rate:.0f})"] + cells)
    _print_table(
        f"Maia-1100 batch {batch}: positions/s and ratio to onnxruntime in the same "
        "subprocess, per XLA_FLAGS",
        header,
        rows,
    )
