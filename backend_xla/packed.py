"""lc0's packed planes on the way to an XLA program (backend option ``packed_input``): a 64-bit
mask of squares and a value for each of the 112 planes, 1.3 KB a position against 28 KB of float
planes; the program expands them on the device (docs/backend.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from engine.backend import INPUT_PLANES

from .errors import NetworkError

BOARD = 8
"""Squares a side: a plane's 64 squares, bit ``s`` of its mask."""


def unpacking(fn: Callable) -> Callable:
    """``fn(params, planes)`` as ``fn(params, masks, values)``: lc0's packed planes (masks uint32
    [N, 112, 2], low word first; values [N, 112]) expanded on the device to float planes
    [N, 112, 8, 8], ``values[p]`` on the squares whose bit is set in plane ``p``'s mask, else 0."""

    def run(params: dict, masks, values):
        import jax.numpy as jnp

        square = jnp.arange(64, dtype=jnp.uint32)
        words = jnp.where(square < 32, masks[..., 0:1], masks[..., 1:2])  # [N, 112, 64]
        bits = (words >> (square % 32)) & 1
        planes = jnp.where(bits == 1, values[..., None], jnp.zeros((), values.dtype))
        return fn(params, planes.reshape(masks.shape[0], masks.shape[1], BOARD, BOARD))

    return run


def packed_words(masks: Any, values: Any, source: str) -> tuple[np.ndarray, np.ndarray]:
    """A program's inputs from masks uint64 [N, 112] and values [N, 112]: the masks as uint32
    pairs, low word first, and the values as float32; raises on other shapes or types."""
    masks, values = np.asarray(masks), np.asarray(values)
    if (
        masks.shape != values.shape
        or masks.ndim != 2
        or masks.shape[1] != INPUT_PLANES
        or not len(masks)
        or masks.dtype != np.uint64
    ):
        raise NetworkError(
            f"{source}: evaluate_packed: expected masks uint64 and values of shape "
            f"[N>=1, {INPUT_PLANES}], got {masks.dtype} {list(masks.shape)} and "
            f"{values.dtype} {list(values.shape)}"
        )
    words = np.ascontiguousarray(masks).view(np.uint32).reshape(len(masks), INPUT_PLANES, 2)
    if not np.little_endian:
        words = words[..., ::-1]  # the low word first, as the program reads it
    return words, values.astype(np.float32, copy=False)


def pack_planes(planes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """float planes [N, 112, 8, 8] -> lc0's packed planes (masks uint64 [N, 112], bit s set where
    square s is not 0; values float32 [N, 112]); a plane whose squares hold more than one nonzero
    value does not pack and is refused."""
    flat = planes.reshape(len(planes), INPUT_PLANES, BOARD * BOARD).astype(np.float32)
    nonzero = flat != 0
    first = np.take_along_axis(flat, nonzero.argmax(axis=2)[..., None], axis=2)[..., 0]
    values = np.where(nonzero.any(axis=2), first, np.float32(0))
    if not np.array_equal(flat, np.where(nonzero, values[..., None], np.float32(0))):
        raise NetworkError(
            "evaluate: expected planes that hold one value each (lc0's planes), got a plane "
            "with several nonzero values, which a network with packed_input cannot take"
        )
    bits = np.left_shift(np.uint64(1), np.arange(BOARD * BOARD, dtype=np.uint64))
    masks = np.bitwise_or.reduce(np.where(nonzero, bits, np.uint64(0)), axis=2)
    return masks.astype(np.uint64), values
