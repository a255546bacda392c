"""Balanced opening positions for strength matches (``bin/dev/train-net openings``).

Each opening is a few *uniformly random* legal plies from the start position, kept only when the
teacher scores it within ``max_cp`` of equality. Random plies (rather than the MultiPV-sampled
openings of the training games, see datagen.py) make the positions held out from the training
data while the score filter keeps them playable for both sides.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

import chess

DEFAULT_NODES = 20_000
"""Teacher nodes per candidate position: enough for a stable opening score."""


@dataclass(frozen=True)
class OpeningConfig:
    count: int = 24
    seed: int = 2026
    min_plies: int = 6
    max_plies: int = 8
    max_cp: int = 60
    nodes: int = DEFAULT_NODES
    max_tries: int = 10_000


def balanced_openings(engine, cfg: OpeningConfig) -> list[chess.Board]:
    """``cfg.count`` distinct positions after min_plies..max_plies random plies whose teacher score
    (``engine.analyse(board, nodes)[0].cp``, side to move) is within ±max_cp and not a game end.

    ``engine`` is a stockfish.Stockfish (or a stand-in with the same ``analyse``).
    Raises RuntimeError when ``max_tries`` candidates do not give ``count`` openings.
    """
    if not 0 < cfg.min_plies <= cfg.max_plies:
        raise ValueError(f"expected 0 < min_plies <= max_plies, got {cfg.min_plies}, {cfg.max_plies}")
    rng = random.Random(cfg.seed)
    found: dict[str, chess.Board] = {}
    for _ in range(cfg.max_tries):
        if len(found) == cfg.count:
            return list(found.values())
        board = chess.Board()
        for _ in range(rng.randint(cfg.min_plies, cfg.max_plies)):
            moves = sorted(board.legal_moves, key=chess.Move.uci)
            if not moves:
                break
            board.push(rng.choice(moves))
        key = board.epd()
        if key in found or board.is_game_over():
            continue
        lines = engine.analyse(board, cfg.nodes)
        if lines and abs(lines[0].cp) <= cfg.max_cp:
            found[key] = board
    if len(found) < cfg.count:
        raise RuntimeError(f"expected {cfg.count} openings within {cfg.max_cp} cp, "
                           f"got {len(found)} from {cfg.max_tries} candidates")
    return list(found.values())


def write_epd(boards: list[chess.Board], path: str | Path) -> None:
    """One EPD line per opening (the form bin/match and cutechess-cli read)."""
    Path(path).write_text("".join(b.epd() + "\n" for b in boards))
