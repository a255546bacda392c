"""Our ONNX conversion of lc0 weight files against lc0's own leela2onnx output (../shared/lc0):
same nodes in the same order, same initializers, same values; generated tables against lc0's."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from onnx import numpy_helper

from backend_xla.lc0 import build_onnx, read_weights
from backend_xla.lc0.to_onnx import position_encoding
from backend_xla.lc0.policy_map import attention_policy_map, conv_policy_map, policy_moves
from lc0w_helpers import shared, zoo_names

ZOO = zoo_names()
F32_RTOL = 1e-6  # LINEAR16 decoding and batch-norm folding agree with lc0 to float32 rounding
F16_ULPS, BF16_ULPS = 2, 1  # lc0's float->half rounding differs from numpy's in rare cases


def _initializers(model) -> dict[str, np.ndarray]:
    return {i.name: numpy_helper.to_array(i) for i in model.graph.initializer}


def _assert_same_graph(ours, theirs, what: str, max_ulps: int | None = None) -> None:
    ours_nodes = [(n.op_type, n.name, list(n.input), list(n.output)) for n in ours.graph.node]
    lc0_nodes = [(n.op_type, n.name, list(n.input), list(n.output)) for n in theirs.graph.node]
    for i, (a, b) in enumerate(zip(ours_nodes, lc0_nodes)):
        assert a == b, f"{what}: node {i}: expected {b}, got {a}"
    assert len(ours_nodes) == len(lc0_nodes), f"{what}: expected {len(lc0_nodes)} nodes, got {len(ours_nodes)}"
    for a, b in zip(ours.graph.node, theirs.graph.node):
        got = {x.name: onnx.helper.get_attribute_value(x) for x in a.attribute}
        want = {x.name: onnx.helper.get_attribute_value(x) for x in b.attribute}
        assert got == want, f"{what}: node {a.name}: attributes expected {want}, got {got}"
    mine, lc0 = _initializers(ours), _initializers(theirs)
    assert set(mine) == set(lc0), f"{what}: initializers differ: {sorted(set(mine) ^ set(lc0))}"
    for name, want in lc0.items():
        got = mine[name]
        assert got.shape == want.shape and got.dtype == want.dtype, (
            f"{what}: {name}: expected {want.dtype}{list(want.shape)}, got {got.dtype}{list(got.shape)}")
        if max_ulps is None or got.dtype.itemsize != 2 or got.dtype.kind in "iu":
            scale = max(1.0, float(np.abs(want.astype(np.float64)).max(initial=0)))
            diff = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max(initial=0))
            assert diff <= F32_RTOL * scale, f"{what}: {name}: max difference {diff} from lc0's values"
        else:
            ulps = np.abs(got.view(np.uint16).astype(np.int32) - want.view(np.uint16).astype(np.int32))
            assert ulps.max(initial=0) <= max_ulps, f"{what}: {name}: {ulps.max()} ulps from lc0's values"
    outputs = [(o.name, o.type.tensor_type.elem_type) for o in ours.graph.output]
    assert outputs == [(o.name, o.type.tensor_type.elem_type) for o in theirs.graph.output], what


@pytest.mark.parametrize("name", ZOO)
def test_zoo_graph_equals_lc0(name):
    weights = read_weights(shared("zoo", f"{name}.pb.gz"))
    _assert_same_graph(build_onnx(weights), onnx.load(shared("zoo", f"{name}.onnx")), name)
    multihead = shared("zoo").joinpath(f"{name}-optimistic-q.onnx")
    if multihead.exists():
        ours = build_onnx(weights, policy_head="optimistic", value_head="q")
        _assert_same_graph(ours, onnx.load(multihead), name + " --policy-head=optimistic --value-head=q")


@pytest.mark.parametrize("data_type,suffix,ulps", [("f32", "", None), ("f16", "-f16", F16_ULPS),
                                                   ("bf16", "-bf16", BF16_ULPS)])
def test_maia_graph_equals_lc0(data_type, suffix, ulps):
    weights = read_weights(shared("maia", "maia-1100.pb.gz"))
    theirs = onnx.load(shared("maia", f"maia-1100{suffix}.onnx"))
    _assert_same_graph(build_onnx(weights, data_type), theirs, f"maia-1100 {data_type}", ulps)


def test_model_conventions():
    model = build_onnx(read_weights(shared("zoo", "se-b2f32-polconv-wdl-input3-canonical.pb.gz")))
    onnx.checker.check_model(model, full_check=True)
    (inp,) = model.graph.input
    dims = [d.dim_param or d.dim_value for d in inp.type.tensor_type.shape.dim]
    assert (inp.name, dims) == ("/input/planes", ["batch", 112, 8, 8])
    assert dict((p.key, p.value) for p in model.metadata_props)["lc0_input_format"] == "3"
    assert model.opset_import[0].version == 17


def test_policy_table_matches_lc0():
    assert list(policy_moves()) == json.loads(shared("policy_index_moves.json").read_text())


def _lc0_table(path, name):
    return [numpy_helper.to_array(i) for i in onnx.load(path).graph.initializer if i.name == name][0]


def test_policy_maps_and_position_encoding_match_lc0():
    conv = _lc0_table(shared("maia", "maia-1100.onnx"), "/const/mapping_table")
    attn = _lc0_table(shared("zoo", "se-b2f32-polattn-polenc1-wdl-relu.onnx"), "/const/mapping_table")
    pos = _lc0_table(shared("zoo", "bt-e64h4-pemap-relu-nosmolgen-wdl-mlh.onnx"), "/const/pos_encoding")
    np.testing.assert_array_equal(conv_policy_map(), conv)
    np.testing.assert_array_equal(attention_policy_map(), attn)
    np.testing.assert_array_equal(position_encoding(), pos.reshape(64, 64))
    assert len(set(conv_policy_map().tolist())) == 1858  # a permutation into the 80x64 output


def test_opset18_real_mish_equals_lc0():
    """lc0's leela2onnx with opset 18 emits a real Mish op instead of Softplus-Tanh-Mul."""
    weights = read_weights(shared("zoo", "se-b4f64-polconv-valclassical-mish.pb.gz"))
    theirs = onnx.load(shared("zoo", "se-b4f64-polconv-valclassical-mish-opset18.onnx"))
    ours = build_onnx(weights, opset=18, real_mish=True)
    assert ours.opset_import[0].version == 18
    assert any(n.op_type == "Mish" for n in ours.graph.node)
    _assert_same_graph(ours, theirs, "se-b4f64 mish --onnx-opset=18")
