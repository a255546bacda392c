"""Shared fixtures: the ``../shared`` ground truth produced by lc0 itself.

Tests that need it skip with a reason when it is absent (it lives beside the repository root).
"""

from __future__ import annotations

import functools
import gzip
import json
from pathlib import Path

import chess
import numpy as np
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED = REPO_ROOT.parent / "shared"
LC0 = SHARED / "lc0"


def need_shared(*parts: str) -> Path:
    """Path inside ../shared/lc0, or skip the calling test when it is missing."""
    path = LC0.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"../shared is absent here: {path} not found")
    return path


def lc0_planes(record: dict) -> np.ndarray:
    """lc0's planes of a reference record as float32 [112, 8, 8]: each of the 112 [mask, value]
    pairs sets bit i of the mask (square i, a1=0) at [i // 8, i % 8] to value."""
    masks = np.array([int(m) for m, _ in record["planes"]], dtype="<u8")
    values = np.array([v for _, v in record["planes"]], dtype=np.float32)
    bits = np.unpackbits(masks.view(np.uint8), bitorder="little").reshape(len(masks), 8, 8)
    return bits.astype(np.float32) * values[:, None, None]


def lc0_planes_batch(records: list[dict]) -> np.ndarray:
    """float32 [N, 112, 8, 8] of :func:`lc0_planes` for each record."""
    return np.stack([lc0_planes(r) for r in records])


def board_of(record: dict) -> chess.Board:
    """The board of a position record: its FEN with its moves played (history matters)."""
    board = chess.Board(record["fen"])
    for uci in record["moves"]:
        board.push_uci(uci)
    return board


def read_jsonl(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


@pytest.fixture(scope="session")
def shared_positions() -> list[dict]:
    """The 301 positions (fen + moves) of ../shared/lc0/positions.jsonl."""
    return read_jsonl(need_shared("positions.jsonl"))


@pytest.fixture(scope="session")
def maia1100_ref() -> list[dict]:
    """lc0's outputs of maia-1100 on every shared position (see ../shared/README.md)."""
    return read_jsonl(need_shared("maia", "ref-maia-1100.jsonl.gz"))


SMALL_BUCKETS = "batch_buckets=8"
"""Backend options of the real networks the tests load: the one batch size a CPU search at the
default minibatch uses (7 positions, padded to 8 and filled with prefetched ones; batches up
to 8 rows go to the smallest compiled size whatever else is compiled, so the search behaves as
at the defaults). The default set is 18 sizes, which a background thread would compile while
the tests run, competing for the cores."""


@functools.lru_cache(maxsize=None)
def _xla_network(path: Path, options: str):
    from backend_xla import load_network

    return load_network(str(path), options)


def xla_network(*parts: str, options: str = SMALL_BUCKETS):
    """The network at ../shared/lc0/<parts> through backend_xla, loaded once per test session
    and options (or skip when ../shared lacks it)."""
    return _xla_network(need_shared(*parts), options)


@pytest.fixture(scope="session")
def maia1900_net():
    """Maia-1900 from lc0's weight file (shared by the search fidelity and nodes-1 tests)."""
    return xla_network("maia", "maia-1900.pb.gz")


@pytest.fixture(scope="session")
def maia1100_net():
    return xla_network("maia", "maia-1100.onnx")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--run-slow", action="store_true", default=False,
                     help="also run tests marked slow (skipped by default to keep CI short)")


def _jax_has_gpu() -> bool:
    try:
        import jax

        return any(d.platform == "gpu" for d in jax.devices())
    except Exception:  # no jax, or no usable accelerator plugin
        return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    run_slow = config.getoption("--run-slow")
    gpu_items = [item for item in items if "gpu" in item.keywords]
    has_gpu = _jax_has_gpu() if gpu_items else False
    for item in items:
        if "slow" in item.keywords and not run_slow:
            item.add_marker(pytest.mark.skip(reason="slow test: run with --run-slow"))
        if "gpu" in item.keywords and not has_gpu:
            item.add_marker(pytest.mark.skip(reason="needs a GPU visible to JAX; none here"))
