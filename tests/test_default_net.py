"""The shipped default network: reproducible from its generator, in lc0's ONNX conventions."""

from __future__ import annotations

import subprocess
import sys

import onnx
import pytest

from conftest import REPO_ROOT

DEFAULT_NET = REPO_ROOT / "nets" / "default.onnx"


def test_generator_reproduces_shipped_file(tmp_path):
    model = onnx.load(DEFAULT_NET)
    props = {p.key: p.value for p in model.metadata_props}
    if props.get("xlazero_untrained") != "1":
        pytest.skip("nets/default.onnx is a trained network now; its provenance is in nets/README.md")
    out = tmp_path / "default.onnx"
    subprocess.run([sys.executable, str(REPO_ROOT / "bin" / "make-default-net"), "--output", str(out)],
                   check=True, capture_output=True)
    assert out.read_bytes() == DEFAULT_NET.read_bytes()


def test_default_net_follows_lc0_conventions():
    model = onnx.load(DEFAULT_NET)
    onnx.checker.check_model(model)
    assert [i.name for i in model.graph.input] == ["/input/planes"]
    dims = [d.dim_value or d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim]
    assert dims[1:] == [112, 8, 8]
    outputs = {o.name for o in model.graph.output}
    assert "/output/policy" in outputs
    assert outputs & {"/output/wdl", "/output/value"}
