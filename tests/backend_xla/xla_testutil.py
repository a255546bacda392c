"""Helpers for the backend tests: fast options and tolerance checks (planes: conftest.lc0_planes)."""

from __future__ import annotations

import numpy as np

from conftest import LC0, read_jsonl, need_shared  # noqa: F401  (re-exported for the tests)

# Options that keep the tests fast: two small buckets, no persistent cache in the user's home.
TEST_OPTIONS = "batch_buckets=1;64,cache_dir=none,background_compile=0"
ONE_SIZE_OPTIONS = "batch_buckets=64,cache_dir=none,background_compile=0"
"""For a test that evaluates one batch of 64: one compile instead of two."""


def legal_logit_error(policy: np.ndarray, records: list[dict]) -> float:
    """Max |ours - lc0| over the legal-move logits of every record."""
    errs = [np.abs(policy[i, r["policy_indices"]] - np.asarray(r["p_raw"])).max()
            for i, r in enumerate(records) if r["policy_indices"]]
    return float(max(errs))


MIDDLEGAME = "r1bq1rk1/ppp1bppp/2n2n2/3pp3/2B1P3/2NP1N2/PPP2PPP/R1BQ1RK1 w - - 0 7"
"""An Italian game's middlegame, 33-64 legal moves a batch: the searches' position."""


def root_visits(net, params, nodes: int, fen: str = MIDDLEGAME) -> list[int]:
    """The root's visits by move after a search of ``nodes`` from ``fen`` (a fresh Search)."""
    import chess

    from engine.search import Limit, Search

    search = Search(net, params)
    try:
        search.set_position(chess.Board(fen))
        search.run(Limit(nodes=nodes))
        return list(search.root.cn)
    finally:
        search.close()

