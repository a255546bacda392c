"""Outputs of our ONNX conversion against lc0's reference outputs (../shared/lc0), evaluated by
onnx's ReferenceEvaluator (few positions), onnxruntime and backend_xla (all positions)."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from backend_xla.lc0 import build_onnx, load_lc0_onnx, read_weights
from conftest import lc0_planes
from lc0w_helpers import (assert_matches_lc0, read_records, run_reference, shared,
                          zoo_names)

REFERENCE_POSITIONS = 6  # onnx.reference is slow; a few positions per network
ZOO = zoo_names()


def _variants():
    cases = [(n, n, {}) for n in ZOO]
    cases += [(n, n + "-optimistic-q", {"policy_head": "optimistic", "value_head": "q"})
              for n in ZOO if "multihead" in n]
    return cases


@pytest.mark.parametrize("net,ref,heads", _variants(), ids=[c[1] for c in _variants()])
def test_zoo_reference_evaluator_matches_lc0(net, ref, heads):
    records = read_records(shared("zoo", f"{ref}-ref.jsonl.gz"), REFERENCE_POSITIONS)
    model = build_onnx(read_weights(shared("zoo", f"{net}.pb.gz")), **heads)
    outputs = run_reference(model, np.stack([lc0_planes(r) for r in records]))
    assert_matches_lc0(outputs, records, ref, zoo=True)
    assert int(dict((p.key, p.value) for p in model.metadata_props)["lc0_input_format"]) == \
        records[0]["input_format"]


@pytest.mark.parametrize("rating", ["1100", "1500"])
def test_maia_reference_evaluator_matches_lc0(rating):
    records = read_records(shared("maia", f"ref-maia-{rating}.jsonl.gz"), 2 * REFERENCE_POSITIONS)
    model = load_lc0_onnx(shared("maia", f"maia-{rating}.pb.gz"))
    outputs = run_reference(model, np.stack([lc0_planes(r) for r in records]))
    assert_matches_lc0(outputs, records, f"maia-{rating}", zoo=False)


def _need_onnxruntime():
    """onnxruntime is the bench extra's: skip before reading the references (2 s a run)."""
    return pytest.importorskip("onnxruntime", reason="onnxruntime is in the bench extra")


def _ort_outputs(model, planes):
    ort = _need_onnxruntime()
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    return dict(zip(names, session.run(None, {"/input/planes": planes})))


@pytest.mark.parametrize("net,ref,heads", _variants(), ids=[c[1] for c in _variants()])
def test_zoo_onnxruntime_all_positions(net, ref, heads):
    _need_onnxruntime()
    records = read_records(shared("zoo", f"{ref}-ref.jsonl.gz"))
    planes = np.stack([lc0_planes(r) for r in records])
    ours = _ort_outputs(build_onnx(read_weights(shared("zoo", f"{net}.pb.gz")), **heads), planes)
    assert_matches_lc0(ours, records, ref, zoo=True)
    theirs = _ort_outputs(onnx.load(shared("zoo", f"{ref}.onnx")), planes)
    for key, want in theirs.items():  # same graph, same weights: the same numbers
        np.testing.assert_allclose(ours[key], want, rtol=1e-5, atol=1e-4, err_msg=f"{ref}: {key}")


@pytest.mark.parametrize("data_type,policy_tol,value_tol", [("f16", 2e-2, 3e-3)])  # CPU onnxruntime lacks bf16 kernels
def test_maia_reduced_precision_onnxruntime(data_type, policy_tol, value_tol):
    """Tolerances: twice those of lc0's own f16/bf16 conversions in ../shared/README.md."""
    _need_onnxruntime()
    records = read_records(shared("maia", "ref-maia-1100.jsonl.gz"))
    planes = np.stack([lc0_planes(r) for r in records])
    model = build_onnx(read_weights(shared("maia", "maia-1100.pb.gz")), data_type)
    if data_type == "bf16":
        import ml_dtypes
        planes = planes.astype(ml_dtypes.bfloat16)
    else:
        planes = planes.astype(np.float16)
    out = {k: np.asarray(v, np.float32) for k, v in _ort_outputs(model, planes).items()}
    policy, wdl = out["/output/policy"], out["/output/wdl"]
    for i, rec in enumerate(records):
        if rec["policy_indices"]:
            diff = np.abs(policy[i, rec["policy_indices"]] - np.asarray(rec["p_raw"])).max()
            assert diff <= policy_tol, f"maia-1100 {data_type} position {i}: policy off by {diff}"
        assert abs(wdl[i, 0] - wdl[i, 2] - rec["q"]) <= value_tol, f"position {i}: q"
        assert abs(wdl[i, 1] - rec["d"]) <= value_tol, f"position {i}: d"


@pytest.mark.parametrize("path,ref", [
    (("maia", "maia-1500.pb.gz"), ("maia", "ref-maia-1500.jsonl.gz")),
    (("zoo", "bt-e64h4-pedense-gating-mish-smolgen-swish-ffnrelu2-wdl-mlh.pb.gz"),
     ("zoo", "bt-e64h4-pedense-gating-mish-smolgen-swish-ffnrelu2-wdl-mlh-ref.jsonl.gz")),
])
def test_backend_xla_loads_pb_gz(path, ref):
    backend_xla = pytest.importorskip("backend_xla")
    records = read_records(shared(*ref))
    net = backend_xla.load_network(str(shared(*path)), "batch_buckets=64,background_compile=0")
    out = net.evaluate(np.stack([lc0_planes(r) for r in records]))
    assert net.input_format == records[0]["input_format"]
    outputs = {"/output/policy": out.policy,
               "/output/wdl": np.stack([(1 + out.q - out.d) / 2, out.d, (1 - out.q - out.d) / 2], 1)}
    if net.has_mlh:
        outputs["/output/mlh"] = out.m[:, None]
    assert_matches_lc0(outputs, records, "/".join(path), zoo=path[0] == "zoo")
