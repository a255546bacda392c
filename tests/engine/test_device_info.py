"""The engine says which device does the work: at load an info string names the platform, the
devices, the data type and the compiled batch sizes, warns about requests unusual on the
platform, and a platform JAX cannot start fails with a sentence that says what to install."""

from __future__ import annotations

import os
import subprocess
import sys

from conftest import REPO_ROOT

ENGINE = [sys.executable, "-m", "engine.uci"]


def _startup(env_extra: dict[str, str], *flags: str) -> list[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("XLA_FLAGS", "JAX_PLATFORMS")}
    env.update(env_extra)
    out = subprocess.run(ENGINE + list(flags), cwd=REPO_ROOT, env=env, capture_output=True,
                         text=True, input="isready\nquit\n", timeout=180)
    return out.stdout.splitlines()


def test_startup_names_platform_devices_type_and_batch_sizes():
    lines = _startup({}, "--backend-opts=conv_method=lax")
    info = [ln for ln in lines if ln.startswith("info string backend xla:")]
    assert info, lines
    assert "platform cpu" in info[0] and "data type" in info[0]
    assert "batch sizes 7,14,32," in info[0] and "search minibatch 7" in info[0]
    assert not any("warning" in ln for ln in lines), lines


def test_forced_host_devices_are_listed_and_unusual_requests_warned():
    # One compiled size each, XLA's own convolution (Winograd programs compile twice as long):
    # the lines under test come from the options, not the compiles.
    lines = _startup({"XLA_FLAGS": "--xla_force_host_platform_device_count=4"},
                     "--backend-opts=batch_buckets=8,conv_method=lax")
    info = next(ln for ln in lines if ln.startswith("info string backend xla:"))
    assert "4 device(s)" in info and "batches of 32+ rows split over them" in info
    assert "smaller ones whole on one device (2 at once)" in info  # CONCURRENT_CALLS copies
    lines = _startup({}, "--backend-opts=device=1,data_type=bf16,batch_buckets=8,conv_method=lax")
    warnings = [ln for ln in lines if ln.startswith("info string warning:")]
    assert len(warnings) == 2, lines
    assert "device=1" in warnings[0] and "batch split" in warnings[0]
    assert "data_type=bf16" in warnings[1] and "slower" in warnings[1]


def test_a_platform_jax_cannot_start_says_how_to_install_it():
    lines = _startup({"JAX_PLATFORMS": "cuda"})
    errors = [ln for ln in lines if ln.startswith("info string error:")]
    if not errors and any("platform gpu" in ln for ln in lines):
        return  # a machine with JAX's GPU build: nothing to report
    assert errors and "JAX_PLATFORMS=cuda" in errors[0], lines
    assert "pip install -e '.[cuda]'" in errors[0]
