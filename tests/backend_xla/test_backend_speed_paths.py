"""The CPU speed paths of backend_xla give the same outputs as the plain op-by-op graph:

* ``layout=NCHW`` (no layout pass) against lc0 on every zoo net with convolutions, as the
  default NHWC is in test_backend_zoo.py;
* the batch split over host devices (``host_devices``) against one device, and against lc0;
* load-time folding of weight-only nodes against ``onnx.reference``;
* the process's set-up (``engine.startup.configure``) asking XLA for one CPU device per core,
  only before jax starts (``import backend_xla`` alone changes nothing: tests/engine/test_startup.py).

The split needs several XLA CPU devices, which can only be requested before jax starts, so those
checks run in a fresh interpreter.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import backend_xla
from backend_xla import onnx_to_jax
from backend_xla.onnx_to_jax import Converter
from conftest import LC0, REPO_ROOT, lc0_planes_batch
from test_backend_zoo import ZOO_LOGIT_ABS, ZOO_LOGIT_REL, ZOO_MLH_TOL, ZOO_VALUE_TOL
from xla_testutil import need_shared, read_jsonl

def _has_conv(path) -> bool:
    return any(n.op_type == "Conv" for n in onnx.load(str(path), load_external_data=False).graph.node)


def _one_per_architecture(names: list[str]) -> list[str]:
    """The zoo's input-format variants (``-input2``, ``-input3``, ...) share one graph up to the
    input planes, so the layout pass meets the same convolutions in each: one of them is kept."""
    variants = [n for n in names if "-input" in n]
    return [n for n in names if "-input" not in n] + variants[:1]


# The layout pass only changes graphs with convolutions (the attention-body nets have none).
CONV_ZOO_FILES = _one_per_architecture(sorted(
    p.name for p in (LC0 / "zoo").glob("*.onnx") if _has_conv(p))) if (LC0 / "zoo").is_dir() else []
LAYOUT_SLOW = {
    "se-b4f64-polconv-valclassical-mish.onnx",  # its opset-18 twin (axes as inputs) runs in CI
    "se-b2f32-polattn-polenc1-wdl-relu.onnx",  # the attention policy head: se-b4f64-polattn
    "se-b2f32-polconv-wdl-input132-canonical-hectoplies-armageddon.onnx",  # se-b3f48-polconv
}
"""Graphs whose convolutions and heads another file of the list already brings: --run-slow."""


def _layout_params(names: list[str]) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in LAYOUT_SLOW else n for n in names]


FAST = "batch_buckets=4,cache_dir=none,background_compile=0,device=0,conv_method=lax"
"""XLA's own convolution, as most of test_backend_zoo.py's networks run it (the Winograd programs,
twice as slow to compile, are checked against lc0 there)."""
LAYOUT_POSITIONS = 4
CHILD_TIMEOUT_S = 300


def _ref(name: str) -> str:
    return name.replace("-opset18.onnx", ".onnx").replace(".onnx", "-ref.jsonl.gz")


@pytest.mark.parametrize("name", _layout_params(CONV_ZOO_FILES) or ["<../shared absent>"])
def test_onnx_layout_matches_lc0(name):
    """``layout=NCHW`` (the graph's own layout, no layout pass) meets lc0's outputs within the
    tolerances that the default NHWC meets on the same networks in test_backend_zoo.py: the
    layout pass is checked against lc0 in both layouts, one compile each."""
    path = need_shared("zoo", name)
    records = [r for r in read_jsonl(need_shared("zoo", _ref(name))) if "policy_full" in r]
    records = records[:LAYOUT_POSITIONS]
    fmt = records[0]["input_format"]
    net = backend_xla.load_network(path, f"{FAST},input_format={fmt},layout=NCHW")
    out = net.evaluate(lc0_planes_batch(records))
    full = np.array([r["policy_full"] for r in records], np.float32)
    err = np.abs(out.policy - full)
    assert (err <= np.maximum(ZOO_LOGIT_ABS, ZOO_LOGIT_REL * np.abs(full))).all(), err.max()
    for field in ("q", "d", "m"):
        want = [r[field] for r in records]
        tol = ZOO_MLH_TOL if field == "m" else ZOO_VALUE_TOL
        np.testing.assert_allclose(getattr(out, field), want, atol=tol, rtol=0, err_msg=field)


def test_layout_pass_keeps_activations_nhwc_between_convs():
    """Maia's tower must run NHWC end to end: only the input and the two heads change layout."""
    import jax

    model = onnx.load(need_shared("maia", "maia-1100.onnx"))
    texts = {}
    for layout in ("NHWC", "NCHW"):
        conv = Converter(model, "maia", layout=layout, conv_method="lax")
        fn, specs = conv.function(8, hwio_filters=True)  # as a one-device program
        params = {k: jax.ShapeDtypeStruct(v.shape, v.dtype)
                  for k, v in conv.params_for(hwio_filters=True).items()}
        texts[layout] = jax.jit(fn).lower(
            params, *[jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs]).as_text()
    # NHWC activations with HWIO filters (transposed once at load, not per call).
    nhwc_convs = texts["NHWC"].count("dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]")
    assert nhwc_convs == texts["NCHW"].count("dim_numbers = [b, f, 0, 1]x[0, 1, i, o]") > 10
    # One transpose of the input planes plus one per head (policy conv output, value conv output);
    # the SE blocks' [N, C, 1, 1] <-> [N, 1, 1, C] changes are reshapes.
    assert texts["NCHW"].count("stablehlo.transpose") == 0
    assert texts["NHWC"].count("stablehlo.transpose") == 3


@pytest.mark.slow  # 6 s: Winograd against lc0 runs by default (test_backend_zoo.py, test_backend_maia.py)
def test_winograd_filters_made_at_load_match_xla_convolution():
    """conv_method=auto: Maia's 3×3 convs as Winograd F(2×2) on filters transformed at load, in
    micro-batches of 8 rows (13 rows: two chunks of 7, one padding row), no convolution left but
    the 1×1 value conv; outputs as XLA's own convolution gives them, one-device and split."""
    import jax

    model = onnx.load(need_shared("maia", "maia-1100.onnx"))
    records = read_jsonl(need_shared("maia", "ref-maia-1100.jsonl.gz"))[:13]
    planes = lc0_planes_batch(records)
    lax_conv = Converter(model, "maia", conv_method="lax")
    auto = Converter(model, "maia")
    assert len(auto.winograd_weights) == 15  # 12 tower, input, two policy convs
    for hwio, rows in ((True, 8), (False, 13)):  # each filter layout, each chunking (a pair
        fn, _ = auto.function(rows, hwio_filters=hwio)  # each: every compile costs seconds)
        text = jax.jit(fn).lower(auto.params_for(hwio), planes[:rows]).as_text()
        assert text.count("stablehlo.convolution") == 1
        assert ("stablehlo.while" in text) == (rows > 8)
        got = jax.jit(fn)(auto.params_for(hwio), planes[:rows])
        ref_fn, _ = lax_conv.function(rows, hwio_filters=hwio)
        want = jax.jit(ref_fn)(lax_conv.params_for(hwio), planes[:rows])
        for g, w in zip(got, want):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), atol=2e-4, rtol=1e-4)


# ------------------------------------------------------------------------------ weight folding


def _cast_weight_model(rows: int) -> onnx.ModelProto:
    """x[N,64] @ Cast(W f32 -> f16) in f16, cast back: the Cast reads only an initializer."""
    w = np.random.default_rng(1).standard_normal((64, rows)).astype(np.float32)
    nodes = [
        helper.make_node("Cast", ["w"], ["w16"], to=onnx.TensorProto.FLOAT16, name="castw"),
        helper.make_node("Cast", ["x"], ["x16"], to=onnx.TensorProto.FLOAT16, name="castx"),
        helper.make_node("MatMul", ["x16", "w16"], ["y16"], name="mm"),
        helper.make_node("Cast", ["y16"], ["y"], to=onnx.TensorProto.FLOAT, name="casty"),
    ]
    graph = helper.make_graph(
        nodes, "fold", [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, ["n", 64])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)],
        [numpy_helper.from_array(w, "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


def _run_converter(conv: Converter, x: np.ndarray) -> np.ndarray:
    import jax

    fn, _ = conv.function(len(x))
    return np.asarray(jax.jit(fn)(conv.params, x)[0])


def test_weight_only_nodes_fold_at_load():
    from onnx.reference import ReferenceEvaluator

    model = _cast_weight_model(300)
    conv = Converter(model, "fold")
    assert conv.folded_nodes == 1 and [n.name for n in conv.nodes] == ["castx", "mm", "casty"]
    assert conv.params["w16"].dtype == np.float16 and "w" not in conv.params
    x = np.random.default_rng(2).standard_normal((5, 64)).astype(np.float32)
    expected = ReferenceEvaluator(model).run(None, {"x": x})[0]
    # f16 products of 64 terms: the reference accumulates in f16 too, XLA may not.
    np.testing.assert_allclose(_run_converter(conv, x), expected, rtol=2e-2, atol=2e-2)


def test_weight_folding_respects_size_limit(monkeypatch):
    monkeypatch.setattr(onnx_to_jax, "FOLD_LIMIT_BYTES", 1000)
    conv = Converter(_cast_weight_model(300), "fold")  # the f16 weight is 38,400 bytes
    assert conv.folded_nodes == 0 and [n.name for n in conv.nodes][0] == "castw"
    x = np.ones((2, 64), np.float32)
    np.testing.assert_array_equal(_run_converter(conv, x),
                                  _run_converter(Converter(_cast_weight_model(300), "f"), x))


# ------------------------------------------------------------------------------ batch split

SPLIT_NET = "se-b2f32-polclassical-wdl-mlh-mish-bn"

SPLIT_CHILD = """
import json, sys
import numpy as np
import backend_xla
import jax
from backend_xla.errors import OptionError
sys.path[:0] = [{tests!r}, {tests!r} + "/.."]
from conftest import lc0_planes_batch
from xla_testutil import read_jsonl
from pathlib import Path
records = [r for r in read_jsonl(Path({ref!r})) if "policy_full" in r]
lc0_planes = lc0_planes_batch(records)
planes = np.concatenate([lc0_planes] * 2)[:17]
# split_min_rows 8 is the default; XLA's own convolution compiles twice as fast as Winograd's
# programs, which the split does not involve (test_backend_zoo.py checks them).
base = "batch_buckets=1;17,cache_dir=none,background_compile=0,split_min_rows=8,conv_method=lax"
split = backend_xla.load_network({net!r}, base)
# The truth: one device, every batch padded to 17 rows (rows are independent; one compile).
one = backend_xla.load_network({net!r}, base.replace("1;17", "17") + ",device=0")
layout = {{str(s): [e.rows, e.devices] for s, e in split.buckets.compiled.items()}}
diffs = {{}}
for n in (1, 17):
    a, b = split.evaluate(planes[:n]), one.evaluate(planes[:n])
    diffs[n] = max(float(np.abs(getattr(a, f) - getattr(b, f)).max()) for f in "policy q d m".split())
# The legal moves' logits gathered from a split batch's policy (backend option policy_gather).
legal = np.random.default_rng(0).integers(0, 1858, (17, 64)).astype(np.int32)
gather_diff = float(np.abs(split.evaluate(planes, legal=legal).policy
                           - np.take_along_axis(split.evaluate(planes).policy, legal, axis=1)).max())
# device=1;0 and device=all split over the devices they name, with the same outputs.
named = {{}}
for spec in ("1;0", "all"):
    net = backend_xla.load_network({net!r}, base.replace("1;17", "17") + ",device=" + spec)
    diff = max(float(np.abs(getattr(net.evaluate(planes), f) - getattr(one.evaluate(planes), f)).max())
               for f in "policy q d m".split())
    named[spec] = [[str(d) for d in net.devices], diff, net.buckets.compiled[17].devices]
full = np.array([r["policy_full"] for r in records], np.float32)
lc0_err = float(np.abs(split.evaluate(lc0_planes).policy - full).max())
errors = []
for opts in ("device=0,host_devices=2", "host_devices=3", "device=0;2", "device=1;1"):
    try:
        backend_xla.load_network({net!r}, base + "," + opts)
        errors.append(None)
    except OptionError as exc:
        errors.append(str(exc))
# The default convolution (Winograd): the split program gets its own XLA options.
from backend_xla import runtime
compiled_with = []
plain_compile = runtime._compile
runtime._compile = lambda *args: compiled_with.append(args[3:]) or plain_compile(*args)
default = backend_xla.load_network({net!r}, "batch_buckets=8;16,cache_dir=none,background_compile=0")
layout["default"] = {{str(s): [e.rows, e.devices] for s, e in default.buckets.compiled.items()}}
a, b = default.evaluate(planes[:16]), one.evaluate(planes[:16])
wino_diff = max(float(np.abs(getattr(a, f) - getattr(b, f)).max()) for f in "policy q d m".split())
winograd = [[o != () for o in compiled_with], compiled_with[-1] == (runtime.SPLIT_WINOGRAD_OPTIONS,), wino_diff]
print(json.dumps([jax.local_device_count(), layout, diffs, lc0_err, errors, named, winograd,
                  gather_diff]))
"""


def _child(code: str, env_extra: dict[str, str]) -> list:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env.update(env_extra, PYTHONPATH=str(REPO_ROOT))
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=CHILD_TIMEOUT_S)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.slow  # 11 s, ten compiles in a child: the split's outputs run by default in
# test_backend_devices.py (test_batch_sharded_equals_unsharded), device errors in test_backend_errors.py
def test_batch_split_equals_one_device_and_lc0():
    net = need_shared("zoo", SPLIT_NET + ".onnx")
    ref = need_shared("zoo", SPLIT_NET + "-ref.jsonl.gz")
    code = SPLIT_CHILD.format(tests=str(REPO_ROOT / "tests" / "backend_xla"), ref=str(ref),
                              net=str(net))
    count, layout, diffs, lc0_err, errors, named, winograd, gather_diff = _child(
        code, {"XLA_FLAGS": "--xla_force_host_platform_device_count=2"})
    assert count == 2
    # split_min_rows=8: under 8 rows per device one device; 17 rows: split, padded to 18.
    # The default (8 rows per device) keeps 8 on one device and splits 16.
    default = layout.pop("default")
    assert layout == {"1": [1, 1], "17": [18, 2]}
    assert default == {"8": [8, 1], "16": [16, 2]}
    for n, diff in diffs.items():
        assert diff <= 1e-5, (n, diff)
    assert lc0_err <= 1e-4
    assert gather_diff == 0.0
    assert "host_devices must be auto" in errors[0]
    assert "at most 2" in errors[1] and "XLA_FLAGS" in errors[1]
    assert "indices below 2" in errors[2] and "got 2" in errors[2]
    assert "distinct indices" in errors[3]
    assert [d[-1] for d in named["1;0"][0]] == ["1", "0"]  # in the order named
    assert len(named["all"][0]) == 2
    for spec, (devices, diff, used) in named.items():
        assert used == 2 and diff <= 1e-5, (spec, devices, diff)
    # Winograd: only the split program (16 rows, compiled last) has its own XLA options; its
    # outputs are XLA's convolution's
    optioned, split_options, diff = winograd
    assert optioned == [False, False, True] and split_options and diff <= 2e-4, winograd


IMPORT_CHILD = """
import json, os, sys
{pre}
from engine.startup import configure
configure()
import jax
print(json.dumps([os.environ.get("XLA_FLAGS"), jax.local_device_count()]))
"""


def test_startup_configures_one_device_per_core_before_jax():
    from backend_xla.devices import usable_cores

    flags, count = _child(IMPORT_CHILD.format(pre=""), {})
    cores = usable_cores()
    assert count == cores
    assert flags == (f"--xla_force_host_platform_device_count={cores}" if cores > 1 else None)


def test_startup_after_jax_left_alone_and_user_flags_merged():
    from backend_xla.devices import DEVICE_COUNT_FLAG, usable_cores

    flags, count = _child(IMPORT_CHILD.format(pre="import jax"), {})
    assert (flags, count) == (None, 1)
    # A user's own flags are kept and the device count is added after them...
    user = "--xla_cpu_use_thunk_runtime=true"
    flags, count = _child(IMPORT_CHILD.format(pre=""), {"XLA_FLAGS": user})
    cores = usable_cores()
    assert flags == (f"{user} {DEVICE_COUNT_FLAG}={cores}" if cores > 1 else user)
    assert count == cores
    # ...unless they set the device count themselves.
    flags, count = _child(IMPORT_CHILD.format(pre=""), {"XLA_FLAGS": f"{DEVICE_COUNT_FLAG}=3"})
    assert (flags, count) == (f"{DEVICE_COUNT_FLAG}=3", 3)


# ------------------------------------------------------------------------------ layout, per op

# (op, extra inputs as numpy initializers (or "g": a traced [2, 6, 1, 1] graph input), attrs).
# Each runs on a conv output (so its input is NHWC inside the converter) on a non-square 4×5
# board, against onnx.reference on the same graph.
LAYOUT_OPS = [
    ("Relu", [], {}),
    ("Add", [np.linspace(-1, 1, 6, dtype=np.float32).reshape(6, 1, 1)], {}),
    ("Mul", ["g"], {}),
    ("Sub", [np.float32(0.5)], {}),
    ("Div", [np.linspace(1, 2, 5, dtype=np.float32)], {}),  # broadcasts along W
    ("Max", [np.linspace(-1, 1, 20, dtype=np.float32).reshape(4, 5)], {}),
    ("Clip", [np.float32(-0.1), np.float32(0.2)], {}),
    ("ReduceMean", [], {"axes": [2, 3], "keepdims": 0}),
    ("ReduceMean", [], {"axes": [2, 3], "keepdims": 1}),
    ("ReduceSum", [np.array([1, 3], np.int64)], {"keepdims": 0}),
    ("ReduceMax", [], {"axes": [-1], "keepdims": 0}),
    ("ReduceMin", [], {"axes": [1], "keepdims": 1}),
    ("GlobalAveragePool", [], {}),
    ("BatchNormalization", [np.linspace(0.5, 1.5, 6, dtype=np.float32),
                            np.linspace(-1, 1, 6, dtype=np.float32),
                            np.linspace(-0.2, 0.3, 6, dtype=np.float32),
                            np.linspace(0.5, 2, 6, dtype=np.float32)], {"epsilon": 1e-3}),
    ("Flatten", [], {}),
    ("Transpose", [], {"perm": [0, 2, 1, 3]}),
    ("Shape", [], {}),
]


def _layout_op_model(op: str, extras: list, attrs: dict) -> onnx.ModelProto:
    rng = np.random.default_rng(3)
    inits = [numpy_helper.from_array(rng.standard_normal((6, 3, 3, 3)).astype(np.float32), "w")]
    inputs = [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3, 4, 5]),
              helper.make_tensor_value_info("g", onnx.TensorProto.FLOAT, [2, 6, 1, 1])]
    names = ["c"]
    for i, extra in enumerate(extras):
        if isinstance(extra, str):
            names.append(extra)
        else:
            names.append(f"k{i}")
            inits.append(numpy_helper.from_array(np.asarray(extra), f"k{i}"))
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1], name="conv"),
             helper.make_node(op, names, ["y"], name="op", **attrs),
             # consume g even when the op does not, so the graph has a fixed input list
             helper.make_node("Identity", ["g"], ["g_out"], name="keep_g")]
    outs = [helper.make_tensor_value_info(n, onnx.TensorProto.UNDEFINED, None) for n in ("y", "g_out")]
    graph = helper.make_graph(nodes, "layout_op", inputs, outs, inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)


@pytest.mark.parametrize("op,extras,attrs", LAYOUT_OPS,
                         ids=[f"{op}-{i}" for i, (op, _, _) in enumerate(LAYOUT_OPS)])
def test_layout_pass_per_op_matches_onnx_reference(op, extras, attrs):
    import jax
    from onnx.reference import ReferenceEvaluator

    model = _layout_op_model(op, extras, attrs)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 3, 4, 5)).astype(np.float32)
    g = rng.standard_normal((2, 6, 1, 1)).astype(np.float32)
    expected = ReferenceEvaluator(model).run(None, {"x": x, "g": g})[0]
    # 16 bytes: the axes stay constants, the per-channel vectors become traced parameters.
    conv = Converter(model, op, layout="NHWC", max_inline_constant_size=16)
    assert conv.hwio_weights == {"w"}
    for hwio in (False, True):  # split programs take ONNX filters, one-device programs HWIO
        fn, _ = conv.function(2, hwio_filters=hwio)
        got = np.asarray(jax.jit(fn)(conv.params_for(hwio), x, g)[0])
        assert got.shape == expected.shape
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5, err_msg=f"hwio={hwio}")


def test_compiled_on_one_core_and_every_thread_gets_its_cores_back(monkeypatch):
    """XLA compiles with its threads on one core (backend_xla.runtime): no loop fusion of the
    program is cut into parallel tasks, and afterwards no thread of the process is left pinned."""
    import os
    import re

    from backend_xla.runtime import COMPILE_CORES_ENV

    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("one usable core: nothing is pinned, nothing cut")
    monkeypatch.delenv(COMPILE_CORES_ENV, raising=False)  # the default (conftest sets "all")
    # A size no other test compiles: JAX keeps compiled programs in memory by their HLO, and a
    # test process compiles with every core in view.
    net = backend_xla.load_network(need_shared("maia", "maia-1100.onnx"),
                                   "batch_buckets=3,cache_dir=none,background_compile=0")
    program = net.buckets.compiled[3].programs[0].as_text()
    cuts = re.findall(r'"outer_dimension_partitions":\[([^\]]*)\]', program)
    assert cuts and not any(cuts), sorted(set(cuts))  # fusions are there, none of them cut
    for tid in os.listdir("/proc/self/task"):
        try:
            assert os.sched_getaffinity(int(tid)) == allowed, tid
        except ProcessLookupError:
            pass  # a thread that ended meanwhile


def test_overlapping_compiles_keep_xla_pinned_until_the_last_ends(monkeypatch):
    """A background compile and one the search asks for may overlap: XLA's threads get their
    cores back when the last of them ends, not the first."""
    import os
    import threading

    import jax.numpy as jnp

    from backend_xla import runtime

    allowed = os.sched_getaffinity(0)
    if len(allowed) < 2:
        pytest.skip("one usable core: nothing is pinned")
    monkeypatch.delenv(runtime.COMPILE_CORES_ENV, raising=False)
    (jnp.ones(64) * 2).block_until_ready()  # XLA's thread pools exist from here on

    def xla_threads() -> list[int]:
        python = {t.native_id for t in threading.enumerate()}
        return [
            int(t)
            for t in os.listdir("/proc/self/task")
            if int(t) not in python
            and not runtime._thread_name(t).startswith(runtime.CODEGEN_THREADS)
        ]

    def pinned() -> bool:
        cores = []
        for tid in xla_threads():
            try:
                cores.append(os.sched_getaffinity(tid))
            except OSError:
                pass  # a thread that ended meanwhile
        if not cores:
            pytest.skip("no thread of XLA's own in this process")
        return all(c == {min(allowed)} for c in cores)

    first = runtime._xla_threads_on_one_core()
    second = runtime._xla_threads_on_one_core()
    first.__enter__()
    assert pinned()
    second.__enter__()
    first.__exit__(None, None, None)
    assert pinned()  # the second compile is still running
    second.__exit__(None, None, None)
    assert not pinned() and all(os.sched_getaffinity(t) == allowed for t in xla_threads())
