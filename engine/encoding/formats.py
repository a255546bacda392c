"""lc0's input formats (``pblczero::NetworkFormat::InputFormat``) and the flags derived from them.

lc0 decides each encoding rule from the format number with comparisons (``>=``), so the flags
below follow that numbering exactly (e.g. format 5, "canonical v2", also uses hectoplies).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

CLASSICAL_112 = 1
"""INPUT_CLASSICAL_112_PLANE: castling as four all-or-nothing planes, side-to-move plane."""
CASTLING_PLANE = 2
"""INPUT_112_WITH_CASTLING_PLANE: castling rights as the castling rooks' squares."""
CANONICAL = 3
"""INPUT_112_WITH_CANONICALIZATION: board transformed to a canonical orientation."""
CANONICAL_HECTOPLIES = 4
"""INPUT_112_WITH_CANONICALIZATION_HECTOPLIES: rule50 plane divided by 100."""
CANONICAL_V2 = 5
"""INPUT_112_WITH_CANONICALIZATION_V2: history keeps only repeated positions."""
CANONICAL_HECTOPLIES_ARMAGEDDON = 132
"""INPUT_112_WITH_CANONICALIZATION_HECTOPLIES_ARMAGEDDON: plane 110 marks black to move."""
CANONICAL_V2_ARMAGEDDON = 133
"""INPUT_112_WITH_CANONICALIZATION_V2_ARMAGEDDON."""

SUPPORTED_INPUT_FORMATS: frozenset[int] = frozenset(
    {
        CLASSICAL_112,
        CASTLING_PLANE,
        CANONICAL,
        CANONICAL_HECTOPLIES,
        CANONICAL_V2,
        CANONICAL_HECTOPLIES_ARMAGEDDON,
        CANONICAL_V2_ARMAGEDDON,
    }
)


class HistoryFill(str, Enum):  # noqa: UP042  (StrEnum's str() is the value, not HistoryFill.X)
    """lc0's ``FillEmptyHistory``: what to show in history slots older than the root position."""

    NO = "no"
    """Leave them empty (all zeros)."""
    FEN_ONLY = "fen_only"
    """Repeat the root position, unless it is the standard start position (lc0's default)."""
    ALWAYS = "always"
    """Always repeat the root position."""


@dataclass(frozen=True)
class FormatRules:
    """Encoding rules of one input format, as lc0's encoder derives them from the number."""

    input_format: int
    castling_as_rooks: bool
    """Planes 104/105 hold castling rooks' squares (else 104..107 are all-or-nothing)."""
    canonical: bool
    """Transform to a canonical orientation; plane 108 is the en-passant marker; history stops
    at castling changes, en-passant positions and zeroing moves."""
    hectoplies: bool
    """Plane 109 is rule50 / 100 (else the raw ply count)."""
    armageddon: bool
    """Plane 110 is all ones when black is to move."""
    repeats_only: bool
    """v2: older history slots only show positions that are repetitions."""


def format_rules(input_format: int) -> FormatRules:
    """Rules for ``input_format``; ValueError naming the supported formats otherwise."""
    if (
        isinstance(input_format, bool)
        or not isinstance(input_format, int)
        or (input_format not in SUPPORTED_INPUT_FORMATS)
    ):
        raise ValueError(
            f"unsupported input format {input_format!r}: expected one of "
            f"{sorted(SUPPORTED_INPUT_FORMATS)}"
        )
    return _RULES[input_format]


def _make_rules(fmt: int) -> FormatRules:
    return FormatRules(
        input_format=fmt,
        castling_as_rooks=fmt >= CASTLING_PLANE,
        canonical=fmt >= CANONICAL,
        hectoplies=fmt >= CANONICAL_HECTOPLIES,
        armageddon=fmt in (CANONICAL_HECTOPLIES_ARMAGEDDON, CANONICAL_V2_ARMAGEDDON),
        repeats_only=fmt in (CANONICAL_V2, CANONICAL_V2_ARMAGEDDON),
    )


_RULES: dict[int, FormatRules] = {fmt: _make_rules(fmt) for fmt in SUPPORTED_INPUT_FORMATS}


def parse_history_fill(history_fill: str | HistoryFill) -> HistoryFill:
    """HistoryFill from its name ("no", "fen_only", "always"); ValueError otherwise."""
    try:
        return HistoryFill(history_fill)
    except ValueError:
        raise ValueError(
            f"unknown history_fill {history_fill!r}: expected one of "
            f"{[h.value for h in HistoryFill]}"
        ) from None
