"""The shipped networks: lc0's ONNX conventions; the untrained one reproducible from its generator;
the default one is the trained network, identical in its ONNX and lc0 (.pb.gz) forms."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import onnx

import backend_xla
from conftest import REPO_ROOT
from engine.loading import DEFAULT_NETWORK, is_untrained

NETS = REPO_ROOT / "nets"
UNTRAINED_NET = NETS / "untrained.onnx"


def test_generator_reproduces_untrained_net(tmp_path):
    out = tmp_path / "untrained.onnx"
    subprocess.run([sys.executable, str(REPO_ROOT / "bin" / "dev" / "make-untrained-net"), "--output", str(out)],
                   check=True, capture_output=True)
    assert out.read_bytes() == UNTRAINED_NET.read_bytes()
    assert is_untrained(UNTRAINED_NET)


def test_shipped_nets_follow_lc0_conventions():
    for path in (UNTRAINED_NET, DEFAULT_NETWORK):
        model = onnx.load(path)
        onnx.checker.check_model(model)
        assert [i.name for i in model.graph.input] == ["/input/planes"], path
        dims = [d.dim_value or d.dim_param for d in model.graph.input[0].type.tensor_type.shape.dim]
        assert dims[1:] == [112, 8, 8], path
        outputs = {o.name for o in model.graph.output}
        assert "/output/policy" in outputs and outputs & {"/output/wdl", "/output/value"}, path
        assert path.stat().st_size < 10 * 2**20, f"{path}: expected under 10 MB"


def test_default_is_trained_and_its_pb_gz_twin_computes_the_same():
    assert DEFAULT_NETWORK.exists() and not is_untrained(DEFAULT_NETWORK)
    twin = DEFAULT_NETWORK.with_suffix("").with_suffix(".pb.gz")
    opts = "batch_buckets=8,cache_dir=none,background_compile=0"
    planes = (np.random.default_rng(0).random((8, 112, 8, 8)) < 0.1).astype(np.float32)
    a = backend_xla.load_network(DEFAULT_NETWORK, opts).evaluate(planes)
    b = backend_xla.load_network(twin, opts).evaluate(planes)
    np.testing.assert_allclose(a.policy, b.policy, atol=1e-4)
    np.testing.assert_allclose(a.q, b.q, atol=1e-5)


def _startup_lines(*flags: str) -> list[str]:
    # XLA's own convolution: the lines name the network, whatever programs it compiles (the
    # Winograd ones compile twice as long).
    flags = ("--backend-opts=conv_method=lax", *flags)
    result = subprocess.run([str(REPO_ROOT / "bin" / "xlazero"), *flags], input="isready\nquit\n",
                            capture_output=True, text=True, timeout=120, cwd="/")
    return [line for line in result.stdout.splitlines() if line.startswith("info string")]


def test_startup_info_names_the_network_and_flags_an_untrained_one():
    default = _startup_lines()
    assert any(DEFAULT_NETWORK.name in line for line in default), default
    assert not any("untrained" in line for line in default), default
    untrained = _startup_lines(f"--weights={UNTRAINED_NET}")
    assert any("untrained" in line and UNTRAINED_NET.name in line for line in untrained), untrained
