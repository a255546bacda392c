"""bin/dev/make-bt-net's generator (xlazero_perf.btnet): a tiny random transformer net loads in
backend_xla, gives finite outputs equal to onnx.reference's on its ONNX conversion, and has the
layer layout of the zoo's lc0-made transformer of the same architecture."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from backend_xla.lc0 import build_onnx, read_weights
from xlazero_perf.btnet import BtConfig, preset, write_bt_net
from conftest import REPO_ROOT, need_shared

TINY = BtConfig(embedding=32, layers=1, heads=2, dff=48, smolgen_hidden_channels=4, smolgen_hidden=16,
                smolgen_gen=8, value_embedding=4, value_hidden=16, mlh_embedding=2, mlh_hidden=8)
ZOO_TEMPLATE = "bt-e64h4-pemap-mish-smolgen-swish-ffnrelu2-wdl-mlh.pb.gz"


def _planes(n: int) -> np.ndarray:
    rng = np.random.default_rng(1)
    planes = (rng.random((n, 112, 8, 8)) < 0.1).astype(np.float32)
    planes[:, 109] = rng.integers(0, 60, size=(n, 1, 1))  # rule-50 count as the plane value
    planes[:, 111] = 1.0
    return planes


def test_tiny_net_loads_and_matches_onnx_reference(tmp_path):
    import backend_xla
    from onnx.reference import ReferenceEvaluator

    path = tmp_path / "tiny.pb.gz"
    count = write_bt_net(path, TINY, seed=3)
    assert count > 0
    planes = _planes(4)
    model = build_onnx(read_weights(path))
    names = [o.name for o in model.graph.output]
    ref = dict(zip(names, ReferenceEvaluator(model).run(None, {"/input/planes": planes})))
    net = backend_xla.load_network(str(path), "batch_buckets=4,background_compile=0")
    out = net.evaluate(planes)
    assert net.has_mlh
    for value in (out.policy, out.q, out.d, out.m):
        assert np.isfinite(value).all()
    assert out.policy.std() > 0.01  # random weights: not a constant policy
    np.testing.assert_allclose(out.policy, ref["/output/policy"], atol=1e-4, rtol=1e-4)
    wdl = ref["/output/wdl"]
    np.testing.assert_allclose(out.q, wdl[:, 0] - wdl[:, 2], atol=1e-5)
    np.testing.assert_allclose(out.d, wdl[:, 1], atol=1e-5)
    np.testing.assert_allclose(out.m, ref["/output/mlh"][:, 0], atol=1e-4)


def test_seed_reproduces_the_file(tmp_path):
    a, b, c = tmp_path / "a.pb.gz", tmp_path / "b.pb.gz", tmp_path / "c.pb.gz"
    write_bt_net(a, TINY, seed=5)
    write_bt_net(b, TINY, seed=5)
    write_bt_net(c, TINY, seed=6)
    assert read_weights(a).net == read_weights(b).net
    assert read_weights(a).net != read_weights(c).net


def _layer_sizes(msg, prefix=""):
    """{field path: number of params bytes} over every Layer; scalars by value."""
    out = {}
    for field, value in msg.ListFields():
        name = prefix + field.name
        if field.message_type is None:
            out[name] = len(value) if field.name == "params" else value
        elif hasattr(value, "add"):  # repeated message
            for i, item in enumerate(value):
                out.update(_layer_sizes(item, f"{name}[{i}]."))
        else:
            out.update(_layer_sizes(value, name + "."))
    return {k: v for k, v in out.items()
            if not k.endswith((".min_val", ".max_val")) and not k.startswith("license")}


def test_zoo_preset_has_the_layout_of_lc0s_own_file(tmp_path):
    template = read_weights(need_shared("zoo", ZOO_TEMPLATE))
    path = tmp_path / "zoo.pb.gz"
    write_bt_net(path, preset("zoo-e64", layers=len(template.net.weights.encoder)))
    assert _layer_sizes(read_weights(path).net) == _layer_sizes(template.net)


def test_make_bt_net_script(tmp_path):
    path = tmp_path / "s.pb.gz"
    run = subprocess.run([sys.executable, str(REPO_ROOT / "bin" / "dev" / "make-bt-net"), "--output", str(path),
                          "--embedding", "32", "--heads", "2", "--layers", "1", "--dff", "32",
                          "--smolgen-channels", "4", "--smolgen-hidden", "8", "--smolgen-gen", "8"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    w = read_weights(path)
    assert w.net.weights.headcount == 2 and len(w.net.weights.encoder) == 1
    bad = subprocess.run([sys.executable, str(REPO_ROOT / "bin" / "dev" / "make-bt-net"), "--output",
                          str(tmp_path / "x.pb.gz"), "--embedding", "30", "--heads", "4"],
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "must divide" in bad.stderr
