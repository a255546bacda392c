"""Training records: compact ``.npz`` chunks of labelled positions, and their decoding to planes.

A chunk holds whole games. Each game is stored once, as its UCI moves from the start position;
each position points at (game, ply), so the exact position *with its full history* (repetitions
included) can be rebuilt. For training speed the encoder's output is stored too, as lc0's 112
uint64 masks (absolute coordinates, as :func:`nets.training.reference.planes.position_masks` gives them).

Arrays of a chunk (N positions, G games, K = :data:`POLICY_TOP_K`):

    games        str  [G]        space-separated UCI moves of each game from the start position
    game_of      i32  [N]        game of each position
    ply          i16  [N]        number of moves played before the position
    masks        u64  [N, 112]   lc0 input masks, absolute coordinates (format 1)
    rule50       u8   [N]        halfmove clock (the value of plane 109 in format 1)
    black        bool [N]        black to move (masks are rank-mirrored when decoded)
    policy_idx   i16  [N, K]     lc0 policy indices of the target moves, -1 padding
    policy_prob  f32  [N, K]     their probabilities (sum 1 over the non-padding entries)
    legal        u8   [N, 233]   np.packbits of the 1858-entry legal-move mask
    wdl          f32  [N, 3]     value target: win / draw / loss for the side to move
    starts       str  [G]        optional: each game's start FEN, "" for the standard start
                                 (games begun from a position of a PGN game; absent otherwise)
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import chess
import numpy as np

from engine.backend import POLICY_SIZE
from nets.training.reference.planes import EncodedMasks, masks_to_planes
from nets.training.reference.transforms import NO_TRANSFORM

POLICY_TOP_K = 8
"""Most target moves kept per position (Stockfish MultiPV lines)."""
LEGAL_BYTES = (POLICY_SIZE + 7) // 8  # 233
CHUNK_SUFFIX = ".npz"

@dataclass(frozen=True)
class Chunk:
    """One chunk's arrays (see the module docstring for shapes)."""

    games: np.ndarray
    game_of: np.ndarray
    ply: np.ndarray
    masks: np.ndarray
    rule50: np.ndarray
    black: np.ndarray
    policy_idx: np.ndarray
    policy_prob: np.ndarray
    legal: np.ndarray
    wdl: np.ndarray
    starts: np.ndarray | None = None

    def __len__(self) -> int:
        return int(self.ply.shape[0])

    def board(self, i: int) -> chess.Board:
        """Position ``i`` with its full move history (python-chess board)."""
        g = self.game_of[i]
        fen = str(self.starts[g]) if self.starts is not None else ""
        board = chess.Board(fen) if fen else chess.Board()
        moves = str(self.games[g]).split()
        for uci in moves[: int(self.ply[i])]:
            board.push_uci(uci)
        return board


_FIELDS = tuple(Chunk.__dataclass_fields__)


def write_chunk(path: str | os.PathLike, chunk: Chunk) -> None:
    """Write ``chunk`` atomically (temporary file + rename), so a killed job leaves no half chunk."""
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **{name: getattr(chunk, name) for name in _FIELDS
                                if getattr(chunk, name) is not None})
    os.replace(tmp, path)


def read_chunk(path: str | os.PathLike) -> Chunk:
    with np.load(path, allow_pickle=False) as z:
        return Chunk(**{name: z[name] for name in _FIELDS if name in z.files})


def list_chunks(directory: str | os.PathLike) -> list[Path]:
    """Finished chunk files of ``directory``, sorted by name (temporary files excluded)."""
    return sorted(p for p in Path(directory).glob("*" + CHUNK_SUFFIX) if ".tmp" not in p.name)


def decode_planes(masks: np.ndarray, rule50: np.ndarray, black: np.ndarray) -> np.ndarray:
    """float32 planes [N, 112, 8, 8] of stored positions (masks [N, 112], rule50 [N], black [N]).

    The engine's own ``masks_to_planes`` decodes them, given back the fields the encoder made
    them from (input format 1: rule50 in plies, no canonical transform), so training sees
    exactly the planes the engine feeds the network.
    """
    return masks_to_planes([EncodedMasks(m, float(r), b, NO_TRANSFORM)
                            for m, r, b in zip(masks.tolist(), rule50.tolist(), black.tolist())])


def dense_policy(policy_idx: np.ndarray, policy_prob: np.ndarray) -> np.ndarray:
    """float32 [N, 1858] target distributions from the sparse (index, probability) pairs."""
    n = policy_idx.shape[0]
    out = np.zeros((n, POLICY_SIZE), np.float32)
    rows = np.repeat(np.arange(n), policy_idx.shape[1])
    idx = policy_idx.reshape(-1)
    keep = idx >= 0
    np.add.at(out, (rows[keep], idx[keep]), policy_prob.reshape(-1)[keep])
    return out


def legal_mask(legal: np.ndarray) -> np.ndarray:
    """bool [N, 1858] from the packed legal-move bits."""
    return np.unpackbits(legal, axis=1, count=POLICY_SIZE).astype(bool)
