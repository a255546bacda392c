"""Helpers for the backend tests: planes from lc0's reference records, tolerance checks."""

from __future__ import annotations

import numpy as np

from conftest import LC0, read_jsonl, need_shared  # noqa: F401  (re-exported for the tests)

SQUARES = 64
PLANES = 112
# Options that keep the tests fast: two small buckets, no persistent cache in the user's home.
TEST_OPTIONS = "batch_buckets=1;64,cache_dir=none,background_compile=0"


def planes_from_record(record: dict) -> np.ndarray:
    """float32 [112, 8, 8] from a reference record's 112 [mask, value] pairs (see ../shared)."""
    bits = np.arange(SQUARES, dtype=np.uint64)
    out = np.zeros((PLANES, SQUARES), np.float32)
    for k, (mask, value) in enumerate(record["planes"]):
        on = (np.uint64(int(mask)) >> bits) & np.uint64(1)
        out[k, on.astype(bool)] = value
    return out.reshape(PLANES, 8, 8)


def planes_from_records(records: list[dict]) -> np.ndarray:
    return np.stack([planes_from_record(r) for r in records])


def legal_logit_error(policy: np.ndarray, records: list[dict]) -> float:
    """Max |ours - lc0| over the legal-move logits of every record."""
    errs = [np.abs(policy[i, r["policy_indices"]] - np.asarray(r["p_raw"])).max()
            for i, r in enumerate(records) if r["policy_indices"]]
    return float(max(errs))
