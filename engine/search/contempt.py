"""WDL contempt as lc0 computes it (src/search/classic/params.cc, search.cc): the network's
win/draw/loss of each new leaf rescaled in lc0's logistic model before it enters the tree, and
the reported WDL and score rescaled back.

lc0's model reads a WDL as a logistic distribution of a game's outcome: ``mu`` the expected
advantage, ``s`` its spread, so that W = logistic((mu - 1) / s) and L = logistic((-1 - mu) / s).
Its options give two numbers (:class:`WdlRescaleParams`): ``ratio`` scales ``s`` (a sharper or
softer game: ``WDLCalibrationElo``, or ``WDLDrawRateTarget`` against ``WDLDrawRateReference``)
and ``diff`` moves ``mu`` by ``diff * s**2`` towards the side contempt favours (the Elo
advantage ``Contempt``, by ``UCI_Opponent``'s name, else ``UCI_RatingAdv``; clamped at
``ContemptMaxValue``, scaled by ``WDLContemptAttenuation``; ``WDLBookExitBias`` in the
draw-rate model). ``ContemptMode`` names that side: ``play`` the side to move at the root (none
in ``go infinite``), ``white_side_analysis`` / ``black_side_analysis`` a colour, ``disable``
none (``ratio`` still applies).

lc0 rescales each network result (cache hits too) as it backs it up, with the sign of the
side that moved into the node. That sign is a function of the position's side to move alone, so
here each batch's values are rescaled as they come from the network (:meth:`WdlRescale.apply`)
and the NN cache keeps them rescaled; a search whose rescaling differs from the one the cache's
values were made with clears the cache first (:meth:`engine.search.state.NNCache.hold_values_of`).
Arithmetic is lc0's: float32 with its FastLog (the selection's own) and FastLogistic, compiled
(core/rescale.py, core/fastmath.py).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from engine.backend import OptionError
from engine.search.core.rescale import rescale, rescale_rows

F32 = np.float32

PLAY, WHITE, BLACK, NONE = "play", "white_side_analysis", "black_side_analysis", "disable"
"""ContemptMode's values (lc0's ContemptMode PLAY, WHITE, BLACK, NONE)."""

INFINITE_CONTEMPT_WARNING = (
    "WARNING: Contempt mode set to 'disable' as 'play' not supported for infinite search."
)
"""lc0's ``info string`` at a ``go infinite`` whose contempt ContemptMode play turns off."""

_STOF = re.compile(r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|inf(?:inity)?|nan)", re.I)


def _stof(text: str) -> float:
    """C++ std::stof: the number at the start of ``text`` (leading spaces skipped, the rest
    ignored); ValueError when there is none."""
    m = _STOF.match(text)
    if not m:
        raise ValueError(text)
    return float(F32(float(m.group(0))))


def contempt_of(opponent: str, contempt: str, rating_adv: float) -> float:
    """lc0's GetContempt: the Elo advantage for the WDL conversion. ``UCI_RatingAdv`` unless
    ``Contempt`` (comma-separated ``[name=]value``) has a value without a name (the last such
    before a match) or a name found in ``UCI_Opponent`` (case-insensitive; the first match
    wins). OptionError names a malformed entry."""
    value = float(rating_adv)
    for entry in contempt.split(","):
        if not entry:
            continue
        parts = entry.split("=")
        if len(parts) == 1:
            try:
                value = _stof(parts[0])
            except ValueError:
                raise OptionError(f"Contempt: invalid default contempt: {entry}") from None
        elif len(parts) == 2:
            if opponent and parts[0].lower() in opponent.lower():
                try:
                    value = _stof(parts[1])
                except ValueError:
                    raise OptionError(f"Contempt: invalid contempt entry: {entry}") from None
                break
        else:
            raise OptionError(f"Contempt: invalid contempt entry: {entry}")
    return value


@dataclass(frozen=True)
class WdlRescaleParams:
    """lc0's WDLRescaleParams: ``ratio`` scales the logistic spread, ``diff`` moves its centre."""

    ratio: float
    diff: float


def _clamp(x: np.float32, bound: np.float32) -> np.float32:
    return min(max(x, -bound), bound)


def accurate_params(
    contempt: float,
    draw_rate_target: float,
    draw_rate_reference: float,
    book_exit_bias: float,
    contempt_max: float,
    attenuation: float,
) -> WdlRescaleParams:
    """lc0's AccurateWDLRescaleParams (WDLCalibrationElo 0): the draw-rate model, in lc0's
    float32 (its cosh squared and ln 10 in double, as C++ promotes them)."""
    target, reference = F32(draw_rate_target), F32(draw_rate_reference)
    if F32(0.0) < target < F32(0.001):
        target = F32(0.001)
    one, half = F32(1.0), F32(0.5)
    scale_reference = one / np.log((one + reference) / (one - reference))
    scale_target = scale_reference if target == 0 else one / np.log((one + target) / (one - target))
    ratio = scale_target / scale_reference
    bias = F32(book_exit_bias)
    cosh_sum = (
        1.0 / float(np.cosh(half * (one - bias) / scale_target)) ** 2
        + 1.0 / float(np.cosh(half * (one + bias) / scale_target)) ** 2
    )
    diff = (
        float(scale_target / (scale_reference * scale_reference))
        / cosh_sum
        * math.log(10)
        / 200
        * float(_clamp(F32(contempt), F32(contempt_max)))
        * float(F32(attenuation))
    )
    return WdlRescaleParams(float(ratio), float(F32(diff)))


def _game_pair_elo(elo: np.float32) -> np.float32:
    """lc0's ConvertRegularToGamePairElo (float32)."""
    sharpness, midpoint = F32(250.0), F32(2737.0)
    return F32(elo + F32(0.5) * sharpness * np.log(F32(1.0) + np.exp((midpoint - elo) / sharpness)))


def simplified_params(
    contempt: float, draw_rate_reference: float, elo_active: float, contempt_max: float,
    attenuation: float,
) -> WdlRescaleParams:  # fmt: skip
    """lc0's SimplifiedWDLRescaleParams (WDLCalibrationElo set): the Elo model, in lc0's
    float32 (ln 10 in double)."""
    scale_zero, elo_slope, offset = F32(15.0), F32(425.0), F32(6.75)
    one = F32(1.0)
    reference = F32(draw_rate_reference)
    scale_reference = one / np.log((one + reference) / (one - reference))
    elo = F32(elo_active)
    elo_opp = _game_pair_elo(F32(elo - _clamp(F32(contempt), F32(contempt_max))))
    elo = _game_pair_elo(elo)
    scale_active = one / (one / scale_zero + np.exp(elo / elo_slope - offset))
    scale_opp = one / (one / scale_zero + np.exp(elo_opp / elo_slope - offset))
    scale_target = np.sqrt((scale_active * scale_active + scale_opp * scale_opp) / F32(2.0))
    ratio = scale_target / scale_reference

    def mu(e: np.float32) -> np.float32:
        tail = float(np.log(one + np.exp(-e / elo_slope + offset) / scale_zero))
        return F32(-math.log(10) / 200 * float(scale_zero) * float(elo_slope) * tail)

    diff = one / (scale_reference * scale_reference) * (mu(elo) - mu(elo_opp)) * F32(attenuation)
    return WdlRescaleParams(float(ratio), float(F32(diff)))


def rescale_params(v: Mapping[str, Any]) -> WdlRescaleParams:
    """The rescaling of the option values ``v`` (UCI names), as lc0's BaseSearchParams."""
    contempt = contempt_of(str(v["UCI_Opponent"]), str(v["Contempt"]), float(v["UCI_RatingAdv"]))
    elo = float(v["WDLCalibrationElo"])
    if elo == 0:
        return accurate_params(
            contempt,
            float(v["WDLDrawRateTarget"]),
            float(v["WDLDrawRateReference"]),
            float(v["WDLBookExitBias"]),
            float(v["ContemptMaxValue"]),
            float(v["WDLContemptAttenuation"]),
        )
    return simplified_params(
        contempt,
        float(v["WDLDrawRateReference"]),
        elo,
        float(v["ContemptMaxValue"]),
        float(v["WDLContemptAttenuation"]),
    )


# ---------------------------------------------------------------------------------- one search
@dataclass(frozen=True)
class WdlRescale:
    """The rescaling of one search: ``ratio`` and ``diff`` (0 with no contempt side),
    ``root_sign`` +1 when the side to move at the root is the one contempt favours, -1 when it is
    the other (any when ``diff`` is 0), ``max_s`` (WDLMaxS), ``objectivity``
    (WDLEvalObjectivity: how much of ``diff`` the reports take back)."""

    ratio: float
    diff: float
    root_sign: float
    max_s: float
    objectivity: float

    @property
    def active(self) -> bool:
        """Whether the network's values change (lc0: ratio != 1, or a diff and a side)."""
        return self.ratio != 1.0 or self.diff != 0.0

    def cache_key(self, root_white: bool) -> tuple[float, float, float] | None:
        """What the values it stores in the NN cache depend on (None: the network's own): the
        ratio, the centre's move for White to move, and WDLMaxS."""
        if not self.active:
            return None
        white_sign = self.root_sign if root_white else -self.root_sign
        return (self.ratio, white_sign * self.diff, self.max_s)

    def apply(
        self, q: np.ndarray, d: np.ndarray, depths: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """A batch's q and d (positions ``depths`` plies below the root) rescaled as lc0's
        FetchSingleNodeResult, into new arrays: in the view of the side that moved into the
        position (q negated), with the sign of that side."""
        q = np.array(q, F32)
        d = np.array(d, F32)
        args = (self.ratio, self.diff, self.root_sign, self.max_s)
        rescale_rows(q, d, depths, len(depths), *args, q, d)  # compiled (core/rescale.py)
        return q, d

    def reported(self, wl: float, d: float) -> tuple[float, float, float]:
        """(W - L, D, mu) of a root move as lc0 reports them (SendUciInfo, VerboseMoveStats):
        ``wl`` in the view of the side to move at the root, the rescaling taken back by
        ``objectivity`` of its ``diff``; mu 0 for a WDL too near its bounds."""
        diff = self.diff * self.objectivity
        v, dd, mu = rescale(wl, d, self.ratio, diff, self.root_sign, True, self.max_s)
        return float(v), float(dd), float(mu)


def for_search(
    mode: str, params: WdlRescaleParams, max_s: float, objectivity: float, root_white: bool,
    infinite: bool,
) -> WdlRescale:  # fmt: skip
    """The rescaling of a search whose root has ``root_white`` to move: lc0's Search takes
    ``play`` as the side to move at the root (here also when pondering: the ponder search's root
    is the position after the expected reply, where lc0's is the one before it, its side the
    other) and as no side in ``go infinite``."""
    if mode == PLAY:
        mode = NONE if infinite else (WHITE if root_white else BLACK)
    diff = 0.0 if mode == NONE else params.diff
    root_sign = 1.0 if (mode == BLACK) == (not root_white) else -1.0
    return WdlRescale(params.ratio, diff, root_sign, max_s, objectivity)
