"""Attention run as one jax.nn.dot_product_attention (backend option ``attention``) against
lc0's outputs, with the same bounds as the graph's own nodes (test_backend_zoo)."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import lc0_planes_batch
from test_backend_zoo import ZOO_LOGIT_ABS, ZOO_LOGIT_REL, ZOO_OPTIONS, ZOO_VALUE_TOL, _ref_path
from xla_testutil import need_shared, read_jsonl

import backend_xla
from backend_xla.attention import find_attention
from backend_xla.network_file import read
from backend_xla.options import parse_options
from engine.backend import OptionError

NETS = [
    # lc0's own ONNX export, smolgen in every layer, and our conversion of a .pb.gz without it
    "bt-e64h4-multihead-pedense-gating-mish-smolgen-wdl-mlh.onnx",
    "bt-e64h4-pemap-relu-nosmolgen-wdl-mlh.pb.gz",
]


@pytest.mark.parametrize("name", NETS)
def test_fused_attention_matches_lc0(name):
    path = need_shared("zoo", name)
    ref = name.replace(".pb.gz", ".onnx")
    records = [r for r in read_jsonl(need_shared("zoo", _ref_path(ref))) if "policy_full" in r]
    records = records[:32]
    opts = f"{ZOO_OPTIONS},input_format={records[0]['input_format']},attention=xla"
    out = backend_xla.load_network(path, opts).evaluate(lc0_planes_batch(records))
    full = np.array([r["policy_full"] for r in records], np.float32)
    err = np.abs(out.policy - full)
    assert (err <= np.maximum(ZOO_LOGIT_ABS, ZOO_LOGIT_REL * np.abs(full))).all(), err.max()
    np.testing.assert_allclose(out.q, [r["q"] for r in records], atol=ZOO_VALUE_TOL, rtol=0)
    np.testing.assert_allclose(out.d, [r["d"] for r in records], atol=ZOO_VALUE_TOL, rtol=0)


def test_every_attention_softmax_is_found():
    """Each Softmax over the last of four axes is one attention: the matcher finds them all and
    nothing else (the WDL head's Softmax, over axis 1, is not one)."""
    name = "bt-e64h4-multihead-pedense-gating-mish-smolgen-wdl-mlh.onnx"
    model = read(need_shared("zoo", name), parse_options("")).proto
    nodes = list(model.graph.node)
    found = find_attention(nodes, [o.name for o in model.graph.output])
    softmaxes = [
        n for n in nodes if n.op_type == "Softmax" and "/mha/" in n.name and n.attribute[0].i == 3
    ]
    assert softmaxes and len(found) == len(softmaxes)
    biased = sum(p.bias is not None for p in found.values())
    assert biased == len(found)  # smolgen in every layer


def test_cudnn_attention_on_the_cpu_is_refused():
    path = need_shared("zoo", NETS[1])
    with pytest.raises(OptionError, match="attention=cudnn: expected a GPU"):
        backend_xla.load_network(path, f"{ZOO_OPTIONS},attention=cudnn")


def test_unknown_attention_choice_lists_the_allowed():
    with pytest.raises(OptionError, match="graph, xla, cudnn"):
        parse_options("attention=flash")
