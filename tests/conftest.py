"""Shared fixtures: the ``../shared`` ground truth produced by lc0 itself.

Tests that need it skip with a reason when it is absent (it lives beside the repository root).
"""

from __future__ import annotations

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
