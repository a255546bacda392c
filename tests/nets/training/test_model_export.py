"""Training step and export: the exported lc0 .pb.gz and its ONNX conversion, run by the engine's
own backend (backend_xla, checked against lc0 elsewhere), reproduce the JAX model."""

from __future__ import annotations

import zlib
from pathlib import Path

import jax
import numpy as np
import pytest

import backend_xla
from backend_xla.lc0 import read_weights
from nets.training.export import export
from nets.training.model import NetConfig, forward, init_params
from nets.training.plot import write_loss_png
from nets.training.train import Placement, losses, train_step

from conftest import REPO_ROOT, run_in_child

TINY = NetConfig(blocks=2, filters=8)
"""Layer shapes of test_train's runs (blocks=1, filters=8; conftest.SAME_PROCESS runs both
modules in one process), so init_params' op-by-op kernels compile once for both."""
CHILD_TIMEOUT_S = 180
TOLERANCE = 1e-4


def _planes(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    planes = (rng.random((n, 112, 8, 8)) < 0.2).astype(np.float32)
    planes[:, 109] = rng.integers(0, 100, n)[:, None, None]  # rule50 plane holds the count
    return planes


def _template(cfg: NetConfig) -> dict:
    """The shapes of ``init_params(cfg, ...)`` (what params_from_weights reads from a template),
    traced without compiling init_params' random ops (one XLA compile per op and shape)."""
    return jax.eval_shape(lambda: init_params(cfg, 0))


ONE_SIZE = "batch_buckets=8,background_compile=0"
"""The one batch size these checks evaluate (at most 8 rows): the default set would compile 17
more sizes in a background thread while the suite runs."""


@pytest.fixture(scope="module")
def tiny_params():
    """A tiny model with every weight and bias random (He init leaves biases at zero)."""
    params = init_params(TINY, seed=3)
    rng = np.random.default_rng(4)
    return jax.tree_util.tree_map(
        lambda a: np.asarray(a) + 0.1 * rng.standard_normal(a.shape).astype(np.float32), params)


@pytest.fixture(scope="module")
def exported(tiny_params, tmp_path_factory):
    out = tmp_path_factory.mktemp("export")
    export(tiny_params, out / "tiny.pb.gz", out / "tiny.onnx", training_steps=7)
    return out


@pytest.mark.parametrize(
    "name", ["tiny.pb.gz", pytest.param("tiny.onnx", marks=pytest.mark.slow)])  # one in CI
def test_exported_files_reproduce_the_jax_model(tiny_params, exported, name):
    planes = _planes(6, seed=5)
    policy, wdl_logits = (np.asarray(x) for x in forward(tiny_params, planes))
    wdl = np.asarray(jax.nn.softmax(wdl_logits, axis=-1))
    net = backend_xla.load_network(str(exported / name), ONE_SIZE)
    out = net.evaluate(planes)
    assert net.input_format == 1 and net.has_wdl and not net.has_mlh
    np.testing.assert_allclose(out.policy, policy, atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(out.q, wdl[:, 0] - wdl[:, 2], atol=TOLERANCE, rtol=0)
    np.testing.assert_allclose(out.d, wdl[:, 1], atol=TOLERANCE, rtol=0)


@pytest.mark.slow  # compiles a full training step (~20-40 s on 2 cores without a warm JAX cache)
def test_policy_scale_multiplies_the_logits_and_leaves_the_value(tiny_params, tmp_path):
    """Searching the scaled export at temperature T equals searching the model at T / scale."""
    scale = 1.359 / 0.7
    export(tiny_params, tmp_path / "scaled.pb.gz", policy_scale=scale)
    planes = _planes(4, seed=8)
    policy, wdl_logits = (np.asarray(x) for x in forward(tiny_params, planes))
    out = backend_xla.load_network(str(tmp_path / "scaled.pb.gz"), ONE_SIZE).evaluate(planes)
    # The backend's rounding error is scaled with the logits (seen: 1.4e-4 on an AMD EPYC host).
    np.testing.assert_allclose(out.policy, scale * policy, atol=TOLERANCE * scale, rtol=1e-5)
    wdl = np.asarray(jax.nn.softmax(wdl_logits, axis=-1))
    np.testing.assert_allclose(out.q, wdl[:, 0] - wdl[:, 2], atol=TOLERANCE, rtol=0)
    with pytest.raises(ValueError, match="expected a positive number"):
        export(tiny_params, tmp_path / "bad.pb.gz", policy_scale=0.0)


def test_exported_weight_file_declares_the_architecture(exported):
    w = read_weights(exported / "tiny.pb.gz")
    assert w.format.name("network") == "NETWORK_SE_WITH_HEADFORMAT"
    assert w.format.name("policy") == "POLICY_CONVOLUTION"
    assert w.format.name("value") == "VALUE_WDL"
    assert w.format.input == 1 and w.format.default_activation == 0
    assert len(w.weights.residual) == TINY.blocks
    assert w.net.training_params.training_steps == 7


@pytest.mark.slow  # compiles a full training step (~20-40 s on 2 cores without a warm JAX cache)
def test_training_steps_lower_the_loss_on_a_fixed_set():
    params = init_params(TINY, seed=0)
    rng = np.random.default_rng(1)
    n = 32
    planes = _planes(n, seed=2)
    legal = rng.random((n, 1858)) < 0.03
    target = np.zeros((n, 1858), np.float32)
    for i in range(n):
        moves = rng.choice(np.flatnonzero(legal[i]), 2, replace=False)
        target[i, moves] = [0.7, 0.3]
    wdl = rng.dirichlet([1, 1, 1], n).astype(np.float32)
    before = [float(x) for x in losses(params, planes, target, legal, wdl)]
    # Independent check of the policy loss at init: cross-entropy over legal moves only.
    logits = np.asarray(forward(params, planes)[0], np.float64)
    masked = np.where(legal, logits, -np.inf)
    logp = masked - np.log(np.exp(masked - masked.max(1, keepdims=True)).sum(1, keepdims=True)) \
        - masked.max(1, keepdims=True)
    expected = -np.mean(np.sum(target * np.where(target > 0, logp, 0.0), axis=1))
    assert before[0] == pytest.approx(expected, rel=1e-4)
    m = jax.tree_util.tree_map(np.zeros_like, params)
    v = jax.tree_util.tree_map(np.zeros_like, params)
    for step in range(40):
        params, m, v, _ = train_step(params, m, v, float(step), 3e-3, planes, target, legal, wdl,
                                     weight_decay=1e-4)
    after = [float(x) for x in losses(params, planes, target, legal, wdl)]
    assert after[0] < 0.5 * before[0]
    assert after[1] < before[1]


def test_loss_png_is_a_valid_image(tmp_path):
    path = tmp_path / "losses.png"
    write_loss_png(path, {"train": [[20, 3.0, 1.0, 0.1], [40, 2.5, 0.9, 0.2]], "val": [[40, 2.6, 0.95, 0.2]]})
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    idat_len = int.from_bytes(data[33:37], "big")
    raw = zlib.decompress(data[41:41 + idat_len])
    assert len(raw) == height * (1 + 3 * width)
    pixels = np.frombuffer(raw, np.uint8).reshape(height, 1 + 3 * width)[:, 1:].reshape(height, width, 3)
    colours = {tuple(c) for c in pixels.reshape(-1, 3)}
    assert (40, 90, 200) in colours and (210, 40, 40) in colours



def check_split_step() -> int:
    """One training step with the batch split over every local device equals the single-device step
    on the whole batch (the gradient is a mean over rows either way); returns the device count."""
    devices = jax.local_devices()
    n = 4 * len(devices)
    rng = np.random.default_rng(3)
    planes = _planes(n, seed=4)
    legal = rng.random((n, 1858)) < 0.03
    target = np.where(legal, 1.0, 0.0).astype(np.float32)
    target /= target.sum(1, keepdims=True)
    wdl = rng.dirichlet([1, 1, 1], n).astype(np.float32)
    params = init_params(TINY, seed=0)
    zeros = jax.tree_util.tree_map(np.zeros_like, params)
    results = []
    for place in (Placement((devices[0],)), Placement.for_batch(n)):
        p, m, v = place.replicate((params, zeros, zeros))
        p, _, _, aux = train_step(p, m, v, 0.0, 3e-3, *place.split(planes, target, legal, wdl))
        results.append((p, aux))
    assert len(Placement.for_batch(n).devices) == len(devices)
    assert len(Placement.for_batch(n + 1).devices) == 1  # rows the devices cannot share evenly
    (single, aux1), (split, aux2) = results
    assert len(jax.tree_util.tree_leaves(split)[0].sharding.device_set) == len(devices)
    np.testing.assert_allclose(np.asarray(aux1), np.asarray(aux2), rtol=1e-5)
    for a, b in zip(jax.tree_util.tree_leaves(single), jax.tree_util.tree_leaves(split)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-4, atol=1e-6)
    changed = max(float(np.abs(np.asarray(a) - np.asarray(b)).max())
                  for a, b in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(split)))
    assert changed > 1e-4  # the step did move the parameters
    return len(devices)


@pytest.mark.slow  # compiles a full training step (~20-40 s on 2 cores without a warm JAX cache)
def test_a_step_split_over_two_devices_equals_the_single_device_step():
    # A fresh interpreter: the XLA CPU device count is fixed once jax has started.
    code = ("import sys; sys.path[:0] = [%r, %r]\n"
            "import test_model_export as t\n"
            "print(t.check_split_step())\n") % (str(Path(__file__).parent), str(REPO_ROOT / "tests"))
    assert run_in_child(code, with_devices=2, timeout=CHILD_TIMEOUT_S).split()[-1] == "2"


def test_a_weight_file_reads_back_into_the_params_it_was_exported_from(tiny_params, tmp_path):
    """params_from_weights inverts export, the policy scale included, so training can go on from
    a shipped file; the truth is the params themselves and the JAX model's outputs."""
    from nets.training.export import params_from_weights
    scale = 2.5
    export(tiny_params, tmp_path / "scaled.pb.gz", policy_scale=scale)
    back = params_from_weights(tmp_path / "scaled.pb.gz", _template(TINY), policy_scale=scale)
    flat, tree = jax.tree_util.tree_flatten(tiny_params)
    flat_back, tree_back = jax.tree_util.tree_flatten(back)
    assert tree == tree_back
    for a, b in zip(flat, flat_back):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    planes = _planes(3, seed=9)
    model = jax.jit(forward)  # one compile for both (op by op, each op compiles per shape)
    for x, y in zip(model(tiny_params, planes), model(back, planes)):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), atol=TOLERANCE)


def test_a_weight_file_of_another_architecture_is_refused_naming_the_layer(exported):
    from nets.training.export import params_from_weights
    with pytest.raises(ValueError, match=r"expected 3 residual blocks, got 2"):
        params_from_weights(exported / "tiny.pb.gz", _template(NetConfig(blocks=3, filters=8)))
    with pytest.raises(ValueError, match=r"residual\[0\]\.conv1\.weights: expected 2304 values .* got 576"):
        params_from_weights(exported / "tiny.pb.gz", _template(NetConfig(blocks=2, filters=16)))
