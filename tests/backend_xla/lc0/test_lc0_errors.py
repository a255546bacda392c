"""Damaged, foreign and unsupported weight files: each a WeightsError naming the file and cause."""

from __future__ import annotations

import copy
import gzip
import os
import subprocess
import sys
import zlib

import numpy as np
import onnx
import pytest

from backend_xla.lc0 import WeightsError, build_onnx, load_lc0_onnx, read_weights
from backend_xla.lc0.netproto import message
from backend_xla.lc0.weights import parse_weights
from backend_xla.lc0.writer import encode_layer, serialize, write_weights
from lc0w_helpers import shared
from conftest import REPO_ROOT

REPO = str(REPO_ROOT)
SMALL_NET = ("zoo", "se-b2f32-polconv-wdl-input2-castlingplane.pb.gz")


def _raw(path) -> bytes:
    return gzip.decompress(path.read_bytes())


def _write(tmp_path, name: str, data: bytes, compress: bool = True):
    path = tmp_path / name
    path.write_bytes(gzip.compress(data) if compress else data)
    return path


def _expect(path, *fragments: str, build: bool = False):
    with pytest.raises(WeightsError) as info:
        if build:
            build_onnx(read_weights(path))
        else:
            read_weights(path)
    message = str(info.value)
    assert str(path) in message, message
    for fragment in fragments:
        assert fragment in message, f"expected {fragment!r} in {message!r}"
    return message


def test_not_gzip(tmp_path):
    _expect(_write(tmp_path, "net.pb.gz", b"PK\x03\x04 a zip file", compress=False), "not a gzip file")


def test_empty_file(tmp_path):
    _expect(_write(tmp_path, "net.pb.gz", b"", compress=False), "not a gzip file")


def test_missing_file(tmp_path):
    _expect(tmp_path / "absent.pb.gz", "cannot read")


def test_truncated_gzip(tmp_path):
    data = shared(*SMALL_NET).read_bytes()
    _expect(_write(tmp_path, "net.pb.gz", data[: len(data) // 2], compress=False), "truncated gzip")


def test_truncated_protobuf(tmp_path):
    raw = _raw(shared(*SMALL_NET))
    _expect(_write(tmp_path, "net.pb.gz", raw[: len(raw) - 1000]), "truncated")


def test_uncompressed_lc0_protobuf_is_accepted(tmp_path):
    raw = _raw(shared(*SMALL_NET))
    plain = read_weights(_write(tmp_path, "net.pb", raw, compress=False))
    assert plain.format == read_weights(shared(*SMALL_NET)).format


def test_gzip_of_something_else(tmp_path):
    _expect(_write(tmp_path, "net.pb.gz", b"hello, this is not a protobuf at all" * 10))


def test_wrong_magic(tmp_path):
    net = parse_weights(_raw(shared(*SMALL_NET)))
    net.net.magic = 0x1234
    _expect(_write(tmp_path, "net.pb.gz", serialize(net.net)), "expected magic 0x1c0, got 0x1234")


def test_old_text_format(tmp_path):
    _expect(_write(tmp_path, "net.txt.gz", b"2\n0.1 0.2\n"), "text weight format")


def test_decompression_bomb_is_capped(tmp_path):
    path = tmp_path / "bomb.pb.gz"
    path.write_bytes(gzip.compress(b"\0" * (64 << 20), compresslevel=9))  # 64 MiB of zeros, ~64 KiB
    with pytest.raises(WeightsError, match="limit") as info:
        read_weights(path, max_bytes=8 << 20)
    assert str(path) in str(info.value)


def test_decompression_stops_reading_early(tmp_path, monkeypatch):
    """The cap is enforced while inflating: no more than about max_bytes is ever produced."""
    produced = []
    real = zlib.decompressobj

    class Spy:
        def __init__(self, *a, **k):
            self._d = real(*a, **k)

        def decompress(self, data, max_length=0):
            out = self._d.decompress(data, max_length)
            produced.append(len(out))
            return out

        def __getattr__(self, name):
            return getattr(self._d, name)

    monkeypatch.setattr(zlib, "decompressobj", Spy)
    path = tmp_path / "bomb.pb.gz"
    path.write_bytes(gzip.compress(b"\0" * (32 << 20), compresslevel=9))
    with pytest.raises(WeightsError):
        read_weights(path, max_bytes=1 << 20)
    assert sum(produced) <= (1 << 20) + 1


def _modified(tmp_path, edit, name="net.pb.gz"):
    net = copy.deepcopy(parse_weights(_raw(shared(*SMALL_NET))).net)
    edit(net)
    path = tmp_path / name
    write_weights(net, path)
    return path


def test_unsupported_network_format(tmp_path):
    def edit(net):
        net.format.network_format.value = 3  # VALUE_PARAM
    _expect(_modified(tmp_path, edit), "value", "VALUE_PARAM", build=True)


def test_unsupported_default_activation(tmp_path):
    def edit(net):
        net.format.network_format.default_activation = 7
    _expect(_modified(tmp_path, edit), "default_activation", build=True)


def test_wrong_weight_size_names_the_layer(tmp_path):
    def edit(net):
        layer = net.weights.residual[1].conv2.weights
        values = np.frombuffer(layer.params, "<u2")[:-9]
        layer.params = values.tobytes()
    _expect(_modified(tmp_path, edit), "weights.residual[1].conv2", "expected", build=True)


def test_declared_dims_must_match(tmp_path):
    def edit(net):
        net.weights.input.biases.dims[:] = [7, 7]
    _expect(_modified(tmp_path, edit), "weights.input.biases", "dims", build=True)


def test_unknown_layer_encoding(tmp_path):
    def edit(net):
        net.weights.input.biases.encoding = 9
    _expect(_modified(tmp_path, edit), "weights.input.biases", "unsupported layer encoding", build=True)


def test_odd_float16_params(tmp_path):
    def edit(net):
        layer = encode_layer(np.ones(32), 2)
        layer.params = layer.params[:-1]
        net.weights.ip2_val_b.CopyFrom(layer)
    _expect(_modified(tmp_path, edit), "weights.ip2_val_b", "multiple of 2", build=True)


def test_missing_head_and_unknown_head_name(tmp_path):
    weights = read_weights(shared(*SMALL_NET))
    with pytest.raises(WeightsError, match="policy head 'optimistic' does not exist"):
        build_onnx(weights, policy_head="optimistic")

    def edit(net):
        for key in ("value", "ip1_val_w", "ip1_val_b", "ip2_val_w", "ip2_val_b"):
            net.weights.ClearField(key)
    _expect(_modified(tmp_path, edit), "value head", build=True)


def test_cli_reports_errors(tmp_path):
    bad = _write(tmp_path, "bad.pb.gz", b"not gzip", compress=False)
    run = subprocess.run([sys.executable, os.path.join(REPO, "bin", "leela2onnx"), f"--input={bad}",
                          f"--output={tmp_path / 'x.onnx'}"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 1 and str(bad) in run.stderr and "not a gzip file" in run.stderr
    assert not (tmp_path / "x.onnx").exists()


def test_message_reads_unset_fields_as_absent():
    layer = message("Layer")
    assert layer.params == b"" and list(layer.dims) == [] and not layer.HasField("params")
    assert not layer.HasField("encoding")  # read as LINEAR16, lc0's default, by layer_values
    parsed = parse_weights(serialize(message("Net", {"magic": 0x1C0, "weights": message("Weights")})))
    assert parsed.weights is not None and parsed.net.weights.ListFields() == []
    assert parse_weights(serialize(message("Net", {"magic": 0x1C0}))).weights is None


def test_unknown_enum_values_are_kept(tmp_path):
    """Enum fields are open integers: a value net.proto does not name reaches the format check
    instead of turning into the default (as a closed proto2 enum would)."""
    def edit(net):
        net.format.network_format.policy = 77
    _expect(_modified(tmp_path, edit), "policy", "77", build=True)


def test_garbage_protobuf_names_what_was_expected(tmp_path):
    raw = _raw(shared(*SMALL_NET))
    path = _write(tmp_path, "net.pb.gz", raw[:40] + b"\x0f" * 64)  # wire type 7 does not exist
    _expect(path, "pblczero.Net", "expected a complete message")


def test_cli_converts_like_build_onnx(tmp_path):
    src = shared("zoo", "bt-e64h4-multihead-pedense-gating-mish-smolgen-wdl-mlh.pb.gz")
    out = tmp_path / "net.onnx"
    run = subprocess.run([sys.executable, os.path.join(REPO, "bin", "leela2onnx"), f"--input={src}",
                          f"--output={out}", "--policy-head=optimistic", "--value-head=q",
                          "--onnx-data-type=f16"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    want = build_onnx(read_weights(src), "f16", policy_head="optimistic", value_head="q")
    assert onnx.load(out).graph == want.graph
