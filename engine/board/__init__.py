"""The compiled board (numba): positions as uint64 rows, legal moves with lc0's policy
indices, copy-make and Zobrist hashes, for the search's hot path.

python-chess stays at the edges (UCI parsing, the final move's legality, Syzygy, tests);
:func:`game_rows` and :func:`to_chess_move` convert between the two.
"""

from engine.compiled_cache import warn_if_not_configured

warn_if_not_configured()  # before numba decorates the board's functions (and the search's)

from .make import game_rows, make_move, move_from_chess  # noqa: E402
from .movegen import in_check, legal_moves  # noqa: E402
from .moves import MAX_MOVES, describe, to_chess_move  # noqa: E402
from .position import FIELDS, compute_hash, from_chess_position, to_board  # noqa: E402

__all__ = [
    "FIELDS",
    "MAX_MOVES",
    "compute_hash",
    "describe",
    "from_chess_position",
    "game_rows",
    "in_check",
    "legal_moves",
    "make_move",
    "move_from_chess",
    "to_board",
    "to_chess_move",
]
