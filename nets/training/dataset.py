"""In-memory training set from chunk files: train/validation split by chunk, batch sampling.

Memory: about 1.2 kB per position (masks 896 B, legal bits 233 B, targets), so a million
positions fit in ~1.2 GB. Planes are decoded per batch (:func:`records.decode_planes`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .records import decode_planes, dense_policy, legal_mask, list_chunks, read_chunk

VALIDATION_EVERY = 20
"""Chunk k is held out for validation when k % VALIDATION_EVERY == VALIDATION_EVERY - 1: whole
games are held out, so validation positions are not near-copies of training ones."""
_ARRAYS = ("masks", "rule50", "black", "policy_idx", "policy_prob", "legal", "wdl")


@dataclass(frozen=True)
class Batch:
    """planes [B, 112, 8, 8], policy target [B, 1858], legal [B, 1858] bool, wdl target [B, 3]."""

    planes: np.ndarray
    policy: np.ndarray
    legal: np.ndarray
    wdl: np.ndarray


def chunk_number(path: Path) -> int:
    """k of ``chunk-SEED-k.npz``."""
    return int(path.stem.rsplit("-", 1)[1])


def is_validation(path: Path) -> bool:
    return chunk_number(path) % VALIDATION_EVERY == VALIDATION_EVERY - 1


class PositionSet:
    """Positions of a set of chunk files, concatenated; :meth:`refresh` adds new chunks."""

    def __init__(self, directory: str, validation: bool, max_positions: int | None = None):
        self.directory = directory
        self.validation = validation
        self.max_positions = max_positions
        self.loaded: set[Path] = set()
        self.arrays: dict[str, np.ndarray] = {}
        self.refresh()

    def refresh(self) -> int:
        """Load chunks that appeared since the last call; returns how many were added."""
        new = [p for p in list_chunks(self.directory)
               if p not in self.loaded and is_validation(p) == self.validation]
        if self.max_positions is not None and len(self) >= self.max_positions:
            return 0
        parts = {name: [self.arrays[name]] if self.arrays else [] for name in _ARRAYS}
        for path in new:
            chunk = read_chunk(path)
            for name in _ARRAYS:
                parts[name].append(getattr(chunk, name))
            self.loaded.add(path)
        if new:
            self.arrays = {name: np.concatenate(v)[: self.max_positions] for name, v in parts.items()}
        return len(new)

    def __len__(self) -> int:
        return int(self.arrays["wdl"].shape[0]) if self.arrays else 0

    def batch(self, rows: np.ndarray) -> Batch:
        a = {name: arr[rows] for name, arr in self.arrays.items()}
        return Batch(planes=decode_planes(a["masks"], a["rule50"], a["black"]),
                     policy=dense_policy(a["policy_idx"], a["policy_prob"]),
                     legal=legal_mask(a["legal"]), wdl=a["wdl"])
