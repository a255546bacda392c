"""bin/onnx2hlo, bin/describenet and .pb.gz delegation."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import helper

import backend_xla
from xlazero_perf.nettools import describenet_main, onnx2hlo_main, truncate_at_unsupported
from conftest import REPO_ROOT, lc0_planes_batch
from xla_testutil import ONE_SIZE_OPTIONS, TEST_OPTIONS, legal_logit_error, need_shared


def test_onnx2hlo_text_matches_lc0_structure(tmp_path, capsys):
    path = need_shared("maia", "maia-1100.onnx")
    out = tmp_path / "maia.hlo.txt"
    proto = tmp_path / "maia.hlo.pb"
    assert onnx2hlo_main([str(path), f"--hlo-text-output={out}", f"--hlo-proto-output={proto}",
                          "--batch-size=333"]) == 0
    text = out.read_text()
    assert text.startswith("HloModule")
    assert "f32[333,112,8,8]" in text and "f32[333,1858]" in text and "f32[333,3]" in text
    # Same number of convolutions as lc0's own conversion (one per Conv node).
    lc0_text = need_shared("maia", "maia-1100.hlo.txt").read_text()
    assert text.count(" convolution(") == lc0_text.count(" convolution(") == 16
    assert proto.stat().st_size > 1000


def test_onnx2hlo_partial_result(tmp_path, capsys):
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2, 3])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, None)
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="ok"),
             helper.make_node("Hardmax", ["r"], ["y"], name="odd")]
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    assert [o.name for o in truncate_at_unsupported(model).graph.output] == ["r"]
    path = tmp_path / "odd.onnx"
    onnx.save(model, path)
    assert onnx2hlo_main([str(path)]) == 1
    assert "Hardmax" in capsys.readouterr().err
    assert onnx2hlo_main([str(path), "--allow-partial-result"]) == 0
    assert "maximum" in capsys.readouterr().out


def test_describenet(capsys):
    assert describenet_main([str(need_shared("maia", "maia-1100.onnx"))]) == 0
    text = capsys.readouterr().out
    assert "input  /input/planes: float32[batch, 112, 8, 8]" in text
    assert "parameters: 867,437" in text
    assert "Conv                   16" in text and "unsupported ops: none" in text


def test_bin_scripts_run_from_any_cwd(tmp_path):
    path = need_shared("maia", "maia-1100.onnx")
    result = subprocess.run([sys.executable, str(REPO_ROOT / "bin" / "describenet"), str(path)],
                            cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "/output/wdl" in result.stdout


def test_pb_gz_delegates_to_lc0_reader(maia1100_ref):
    pytest.importorskip("backend_xla.lc0.build")
    net = backend_xla.load_network(need_shared("maia", "maia-1100.pb.gz"), ONE_SIZE_OPTIONS)
    records = maia1100_ref[:64]
    out = net.evaluate(lc0_planes_batch(records))
    assert legal_logit_error(out.policy, records) < 5e-3
    np.testing.assert_allclose(out.q, [r["q"] for r in records], atol=1e-4)
