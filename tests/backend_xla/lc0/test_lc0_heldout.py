"""Networks of the same architectures with other weights: re-randomized Maia-like SE nets written
back in lc0's format (several layer encodings, unfolded batch-norm) and checked against a
separate numpy forward pass; older files without format fields; layer encodings."""

from __future__ import annotations

import copy
import gzip

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from backend_xla.lc0 import build_onnx, describe, read_weights
from backend_xla.lc0.netproto import Message, message
from backend_xla.lc0.weights import layer_values, parse_weights
from backend_xla.lc0.writer import encode_layer, write_weights
from conftest import lc0_planes
from lc0w_helpers import assert_matches_lc0, read_records, run_reference, shared

ENC_LINEAR16, ENC_FLOAT16, ENC_BFLOAT16, ENC_FLOAT32 = 1, 2, 3, 4
BN_EPS = 1e-5
POSITIONS = 4


# ----------------------------------------------------------------------------- numpy reference
def _conv(x, w, b):
    """x [N,C,8,8], w [O,C,k,k] (k = 1 or 3, zero padding), b [O]."""
    k = w.shape[-1]
    p = k // 2
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    out = np.zeros((x.shape[0], w.shape[0], 8, 8))
    for dy in range(k):
        for dx in range(k):
            out += np.einsum("nchw,oc->nohw", xp[:, :, dy:dy + 8, dx:dx + 8], w[:, :, dy, dx])
    return out + b[None, :, None, None]


def _bn(x, bn):
    mean, var, gamma, beta = (bn[k][None, :, None, None] for k in ("mean", "var", "gamma", "beta"))
    return (x - mean) / np.sqrt(var + BN_EPS) * gamma + beta


def _relu(x):
    return np.maximum(x, 0)


def reference_forward(p, planes, mapping):
    """SE residual tower + convolution policy + WDL value, from plain parameter arrays."""
    def block(x, c):
        y = _conv(x, c["w"], c["b"])
        return _bn(y, c["bn"]) if "bn" in c else y

    x = _relu(block(planes.astype(np.float64), p["input"]))
    for r in p["residual"]:
        y = _relu(block(x, r["conv1"]))
        y = block(y, r["conv2"])
        pooled = y.mean(axis=(2, 3))
        h = _relu(pooled @ r["se"]["w1"].T + r["se"]["b1"])
        g = h @ r["se"]["w2"].T + r["se"]["b2"]
        c = y.shape[1]
        gate = 1 / (1 + np.exp(-g[:, :c]))
        x = _relu(gate[:, :, None, None] * y + g[:, c:, None, None] + x)
    pol = _relu(block(x, p["policy1"]))
    pol = block(pol, p["policy"]).reshape(len(x), -1)[:, mapping]
    v = _relu(block(x, p["value"])).reshape(len(x), -1)
    v = _relu(v @ p["ip1_val_w"].T + p["ip1_val_b"])
    logits = v @ p["ip2_val_w"].T + p["ip2_val_b"]
    e = np.exp(logits - logits.max(1, keepdims=True))
    return pol, e / e.sum(1, keepdims=True)


# ----------------------------------------------------------------------------- re-randomizing
class Randomizer:
    """Replaces every layer of a net with random values exactly representable in its encoding."""

    def __init__(self, seed: int):
        self.rng = np.random.default_rng(seed)
        self.count = 0

    @staticmethod
    def representable(v: np.ndarray, encoding: int) -> np.ndarray:
        if encoding == ENC_FLOAT16:
            return v.astype(np.float16).astype(np.float32)
        if encoding == ENC_BFLOAT16:
            return (v.view(np.uint32) & 0xFFFF0000).view(np.float32)
        return v

    def layer(self, shape, scale, positive=False):
        encoding = (ENC_FLOAT32, ENC_FLOAT16, ENC_BFLOAT16)[self.count % 3]
        self.count += 1
        v = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        if positive:  # variances and gammas
            v = np.abs(v) + np.float32(0.5)
        v = self.representable(v, encoding)
        return v, encode_layer(v, encoding)

    def conv(self, block: Message, cout: int, cin: int, k: int, with_bn: bool) -> dict:
        w, wl = self.layer((cout, cin, k, k), 1.5 / np.sqrt(cin * k * k))
        b, bl = self.layer((cout,), 0.1)
        block.Clear()
        block.weights.CopyFrom(wl)
        block.biases.CopyFrom(bl)
        out = {"w": w.astype(np.float64), "b": b.astype(np.float64)}
        if with_bn:
            bn = {}
            for key, field, scale, positive in (("mean", "bn_means", 0.2, False),
                                                ("var", "bn_stddivs", 0.5, True),
                                                ("gamma", "bn_gammas", 0.3, True),
                                                ("beta", "bn_betas", 0.1, False)):
                arr, layer = self.layer((cout,), scale, positive)
                bn[key] = arr.astype(np.float64)
                getattr(block, field).CopyFrom(layer)
            out["bn"] = bn
        return out

    def dense(self, holder: Message, field: str, shape, scale=None) -> np.ndarray:
        v, layer = self.layer(shape, scale if scale is not None else 1.0 / np.sqrt(shape[-1]))
        getattr(holder, field).CopyFrom(layer)
        return v.astype(np.float64)


def randomized_maia(tmp_path, seed: int):
    net = copy.deepcopy(parse_weights(gzip.decompress(shared("maia", "maia-1100.pb.gz").read_bytes())).net)
    w, rnd, params = net.weights, Randomizer(seed), {}
    filters = 64
    params["input"] = rnd.conv(w.input, filters, 112, 3, with_bn=True)
    params["residual"] = []
    for i, r in enumerate(w.residual):
        se_size = 8
        entry = {"conv1": rnd.conv(r.conv1, filters, filters, 3, with_bn=i % 2 == 0),
                 "conv2": rnd.conv(r.conv2, filters, filters, 3, with_bn=i % 2 == 1),
                 "se": {"w1": rnd.dense(r.se, "w1", (se_size, filters)),
                        "b1": rnd.dense(r.se, "b1", (se_size,), 0.1),
                        "w2": rnd.dense(r.se, "w2", (2 * filters, se_size)),
                        "b2": rnd.dense(r.se, "b2", (2 * filters,), 0.1)}}
        params["residual"].append(entry)
    params["policy1"] = rnd.conv(w.policy1, filters, filters, 3, with_bn=True)
    params["policy"] = rnd.conv(w.policy, 80, filters, 3, with_bn=False)
    params["value"] = rnd.conv(w.value, 32, filters, 1, with_bn=True)
    params["ip1_val_w"] = rnd.dense(w, "ip1_val_w", (128, 32 * 64))
    params["ip1_val_b"] = rnd.dense(w, "ip1_val_b", (128,), 0.1)
    params["ip2_val_w"] = rnd.dense(w, "ip2_val_w", (3, 128))
    params["ip2_val_b"] = rnd.dense(w, "ip2_val_b", (3,), 0.1)
    path = tmp_path / f"maia-random-{seed}.pb.gz"
    write_weights(net, path)
    return path, params


@pytest.mark.parametrize("seed", [1, 2])
def test_randomized_maia_matches_numpy_reference(tmp_path, seed):
    path, params = randomized_maia(tmp_path, seed)
    records = read_records(shared("maia", "ref-maia-1100.jsonl.gz"), POSITIONS)
    planes = np.stack([lc0_planes(r) for r in records])
    lc0_onnx = onnx.load(shared("maia", "maia-1100.onnx"))
    mapping = [numpy_helper.to_array(i) for i in lc0_onnx.graph.initializer
               if i.name == "/const/mapping_table"][0]
    want_policy, want_wdl = reference_forward(params, planes, mapping)
    out = run_reference(build_onnx(read_weights(path)), planes)
    np.testing.assert_allclose(out["/output/policy"], want_policy, rtol=1e-4, atol=1e-4,
                               err_msg=f"{path.name}: policy")
    np.testing.assert_allclose(out["/output/wdl"], want_wdl, rtol=1e-4, atol=1e-5,
                               err_msg=f"{path.name}: wdl")
    assert np.abs(want_policy).max() > 0.5, "the random net should produce non-trivial logits"


def test_older_file_without_format_uses_lc0_defaults(tmp_path):
    """A classical-policy, classical-value net written without any format fields."""
    name = "res-classical-b2f32-polclassical-valclassical-relu-bn"
    net = copy.deepcopy(parse_weights(gzip.decompress(shared("zoo", f"{name}.pb.gz").read_bytes())).net)
    net.ClearField("format")
    path = tmp_path / "old.pb.gz"
    write_weights(net, path)
    weights = read_weights(path)
    assert not weights.had_network_format
    assert [weights.format.name(f) for f in ("input", "network", "policy", "value", "moves_left")] == [
        "INPUT_CLASSICAL_112_PLANE", "NETWORK_CLASSICAL_WITH_HEADFORMAT", "POLICY_CLASSICAL",
        "VALUE_CLASSICAL", "MOVES_LEFT_NONE"]
    records = read_records(shared("zoo", f"{name}-ref.jsonl.gz"), POSITIONS)
    out = run_reference(build_onnx(weights), np.stack([lc0_planes(r) for r in records]))
    assert_matches_lc0(out, records, "old-format " + name, zoo=True)
    assert any("no network format" in line for line in describe(path))


@pytest.mark.parametrize("network,expected", [(1, "NETWORK_CLASSICAL_WITH_HEADFORMAT"),
                                              (2, "NETWORK_SE_WITH_HEADFORMAT")])
def test_old_network_structures_are_upgraded(tmp_path, network, expected):
    net = copy.deepcopy(parse_weights(gzip.decompress(shared("maia", "maia-1100.pb.gz").read_bytes())).net)
    fmt = net.format.network_format
    fmt.network, fmt.policy, fmt.value = network, 0, 0
    path = tmp_path / "old.pb.gz"
    write_weights(net, path)
    fmt = read_weights(path).format
    assert (fmt.name("network"), fmt.name("policy"), fmt.name("value")) == (
        expected, "POLICY_CLASSICAL", "VALUE_CLASSICAL")


@pytest.mark.parametrize("encoding,tolerance", [(ENC_LINEAR16, 1.0 / 65535), (ENC_FLOAT16, 0.0),
                                                (ENC_BFLOAT16, 0.0), (ENC_FLOAT32, 0.0)])
def test_layer_encodings_round_trip(encoding, tolerance):
    rng = np.random.default_rng(7)
    values = rng.uniform(-3, 5, 1000).astype(np.float32)
    if encoding == ENC_FLOAT16:
        values = values.astype(np.float16).astype(np.float32)
    if encoding == ENC_BFLOAT16:
        values = (values.view(np.uint32) & 0xFFFF0000).view(np.float32)
    decoded = layer_values(encode_layer(values, encoding), "test layer")
    span = float(values.max() - values.min())
    assert np.abs(decoded - values).max() <= tolerance * span + 1e-6


def test_linear16_decodes_like_lc0():
    """q / 65535 interpolates between min_val and max_val (lc0's LayerAdapter)."""
    q = np.array([0, 65535, 32768, 1], "<u2")
    layer = message("Layer", {"min_val": -2.0, "max_val": 6.0, "params": q.tobytes()})
    theta = q.astype(np.float64) / 65535
    np.testing.assert_allclose(layer_values(layer, "l"), -2.0 * (1 - theta) + 6.0 * theta, rtol=1e-7)
