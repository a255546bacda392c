"""Every lc0 architecture of ../shared/lc0/zoo (and Maia in f16/bf16) against lc0's outputs."""

from __future__ import annotations


import numpy as np
import pytest

import backend_xla
from conftest import LC0, lc0_planes_batch
from xla_testutil import legal_logit_error, need_shared, read_jsonl

ZOO_OPTIONS = "batch_buckets=64,cache_dir=none,background_compile=0"
ZOO_POSITIONS = 50
# Tolerances from the issue (zoo, f32): absolute on all 1858 logits, plus relative where large.
ZOO_LOGIT_ABS, ZOO_LOGIT_REL = 1e-4, 1e-5
ZOO_VALUE_TOL = 1e-5
ZOO_MLH_TOL = 1e-4

ZOO_FILES = sorted(p.name for p in (LC0 / "zoo").glob("*.onnx")) if (LC0 / "zoo").is_dir() else []
LAX_ZOO_FILES = [n for n in ZOO_FILES if "-input" in n][1:]
"""The zoo's input-format variants share one architecture (se-b2f32-polconv-wdl): the first runs
the default convolution (Winograd), the others XLA's own, whose programs compile twice as fast
(the input format, which is what they differ in, reaches the network either way)."""
WINOGRAD_ZOO_FILES = {n for n in ZOO_FILES if "-input" in n and n not in LAX_ZOO_FILES} | {
    "se-b3f48-polconv-wdl-mlh-relu.onnx"
}
"""The zoo nets that run the default convolution (Winograd on the CPU): one of 32 channels, one
of 48. The others, which test architectures, run XLA's own, whose programs compile 2-4 times as
fast (1.1 against 2.0 s, 0.8 against 3.3 s here); Winograd itself is checked against XLA's
convolution (test_backend_speed_paths.py) and against lc0 on Maia's 64 channels
(test_backend_maia.py)."""


def _ref_path(onnx_name: str) -> str:
    return onnx_name.replace("-opset18.onnx", ".onnx").replace(".onnx", "-ref.jsonl.gz")


def _zoo_params(names: list[str]) -> list:
    """The input-format variants after the first differ here in their weights only (the planes
    are lc0's own; each format's encoding is checked against lc0's planes in
    tests/engine/encoding and end to end in tests/backend_xla/lc0/test_lc0_engine_plays.py):
    --run-slow."""
    return [pytest.param(n, marks=pytest.mark.slow) if n in LAX_ZOO_FILES else n for n in names]


@pytest.mark.parametrize("name", _zoo_params(ZOO_FILES) or ["<../shared absent>"])
def test_zoo_network_matches_lc0(name):
    path = need_shared("zoo", name)
    records = [r for r in read_jsonl(need_shared("zoo", _ref_path(name))) if "policy_full" in r]
    records = records[:ZOO_POSITIONS]
    fmt = records[0]["input_format"]
    conv = "" if name in WINOGRAD_ZOO_FILES else ",conv_method=lax"
    net = backend_xla.load_network(path, f"{ZOO_OPTIONS},input_format={fmt}{conv}")
    assert net.input_format == fmt
    out = net.evaluate(lc0_planes_batch(records))
    full = np.array([r["policy_full"] for r in records], np.float32)
    err = np.abs(out.policy - full)
    assert (err <= np.maximum(ZOO_LOGIT_ABS, ZOO_LOGIT_REL * np.abs(full))).all(), err.max()
    np.testing.assert_allclose(out.q, [r["q"] for r in records], atol=ZOO_VALUE_TOL, rtol=0)
    np.testing.assert_allclose(out.d, [r["d"] for r in records], atol=ZOO_VALUE_TOL, rtol=0)
    np.testing.assert_allclose(out.m, [r["m"] for r in records], atol=ZOO_MLH_TOL, rtol=0)
    assert net.has_mlh == ("mlh" in name and "nomlh" not in name)
    assert net.has_wdl == ("wdl" in name)


# Reduced-precision Maia: (file, options, logit tol, q/d tol). Measured maxima on all 301
# positions are in docs/backend.md; these bounds leave ~1.5x headroom.
# CI runs the two conversions (f32 weights run as f16 and bf16) and lc0's own bf16 file; lc0's
# f16 file and the bf16 file run in f32 (the same paths, other inputs) run with --run-slow.
_SLOW = pytest.mark.slow
LOW_PRECISION = [
    pytest.param("maia-1100-f16.onnx", "", 3e-2, 4e-3, marks=_SLOW),
    ("maia-1100.onnx", "data_type=f16", 3e-2, 4e-3),
    pytest.param("maia-1100-bf16.onnx", "data_type=f32", 3e-2, 4e-3, marks=_SLOW),
    ("maia-1100-bf16.onnx", "", 0.2, 0.025),
    ("maia-1100.onnx", "data_type=bf16", 0.3, 0.04),
]


COMPUTED_NAMES = {"f16": "float16", "bf16": "bfloat16", "f32": "float32"}


@pytest.mark.parametrize("name,options,logit_tol,value_tol", LOW_PRECISION)
def test_maia_reduced_precision(name, options, logit_tol, value_tol, maia1100_ref):
    # XLA's own convolution, as reduced precision runs on a GPU (auto is lax there)
    net = backend_xla.load_network(
        need_shared("maia", name), f"{ZOO_OPTIONS},conv_method=lax,{options}"
    )
    out = net.evaluate(lc0_planes_batch(maia1100_ref))
    assert out.policy.dtype == np.float32
    # The heads cross back in the type they were computed in (half the bytes in bf16/f16)
    # and are widened on the host.
    computed = options.removeprefix("data_type=") or name.removesuffix(".onnx").split("-")[-1]
    raw = net.buckets.executable(64).zero_run()
    assert {r.dtype.name for r in raw} == {COMPUTED_NAMES[computed]}
    assert legal_logit_error(out.policy, maia1100_ref) < logit_tol
    np.testing.assert_allclose(out.q, [r["q"] for r in maia1100_ref], atol=value_tol, rtol=0)
    np.testing.assert_allclose(out.d, [r["d"] for r in maia1100_ref], atol=value_tol, rtol=0)


MULTIHEAD = "bt-e64h4-multihead-pedense-gating-mish-smolgen-wdl-mlh"


def test_multihead_weights_select_heads_through_backend_options():
    """A .pb.gz multi-head net with lc0's --policy-head/--value-head given as backend options."""
    path = need_shared("zoo", f"{MULTIHEAD}.pb.gz")
    records = read_jsonl(need_shared("zoo", f"{MULTIHEAD}-optimistic-q-ref.jsonl.gz"))[:8]
    net = backend_xla.load_network(path, f"{ZOO_OPTIONS},policy_head=optimistic,value-head=q")
    out = net.evaluate(lc0_planes_batch(records))
    full = np.array([r["policy_full"] for r in records], np.float32)
    assert np.abs(out.policy - full).max() <= ZOO_LOGIT_ABS + ZOO_LOGIT_REL * np.abs(full).max()
    np.testing.assert_allclose(out.q, [r["q"] for r in records], atol=ZOO_VALUE_TOL, rtol=0)


def test_unknown_head_names_the_heads_the_file_has():
    path = need_shared("zoo", f"{MULTIHEAD}.pb.gz")
    with pytest.raises(ValueError, match="policy.*nonexistent") as info:
        backend_xla.load_network(path, f"{ZOO_OPTIONS},policy_head=nonexistent")
    assert "optimistic" in str(info.value)
