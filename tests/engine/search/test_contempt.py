"""WDL contempt as lc0 computes it (engine/search/contempt.py), against lc0's own functions.

The reference numbers below come from lc0's code itself (master 909a408): its
``AccurateWDLRescaleParams``, ``SimplifiedWDLRescaleParams`` (src/search/classic/params.cc),
``WDLRescale`` (src/search/classic/search.cc) and utils/fastmath.h, copied unchanged into a
small program built with ``g++ -O2 -march=x86-64-v3 -std=c++20`` (the same numbers with
``-ffp-contract=fast``) that prints them for the inputs here. The search against lc0's own
root visits with these options is tests/engine/search/test_search_fidelity.py.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine import options as opts
from engine.backend import NetworkOutput
from engine.search import contempt as ct
from engine.search.params import from_options
from engine.search.state import NNCache

# (contempt, draw rate target, reference, book exit bias, max, attenuation) -> (ratio, diff)
LC0_ACCURATE = [
    ((100, 0.0, 0.5, 0.65, 420, 1.0), (1.0, 0.874448895)),
    ((150, 0.65, 0.5, 0.3, 420, 1.0), (0.708509088, 1.14900756)),
    ((900, 0.9, 0.6, 0.2, 420, 0.5), (0.470817924, 3.69751239)),
]
# (contempt, reference, Elo, max, attenuation) -> (ratio, diff)
LC0_SIMPLIFIED = [
    ((150, 0.5, 1900, 420, 1.0), (3.45388603, 3.34797764)),
    ((300, 0.5, 2400, 420, 1.0), (2.260427, 4.735744)),
]
# WDLRescale(v, d, ratio 1.3, diff 0.8744489, sign, invert, max_s 1.4): lc0's v, d and mu.
LC0_RESCALE = """
0 0.100000001 0.5 1 0.330913275 0.352089733 0.948673308
0 0.100000001 0.5 -1 -0.163791209 0.392201751 -0.460180998
0 -0.300000012 0.300000012 1 0.180599093 0.257747531 0.713919759
0 -0.300000012 0.300000012 -1 -0.604116201 0.166106462 -2.71391988
0 0.899999976 0.0500000007 1 0.955196202 0.0219779704 7.12049627
0 0.899999976 0.0500000007 -1 0.743793607 0.115464099 3.69265676
0 0 0.600000024 1 0.182892412 0.466667384 0.455012679
0 0 0.600000024 -1 -0.182892412 0.466667354 -0.455012679
0 0.550000012 0.200000003 1 0.767896175 0.105756976 3.90429258
0 0.550000012 0.200000003 -1 0.120524555 0.263083845 0.476452947
0 -0.720000029 0.100000001 1 -0.591029167 0.170562029 -2.63632369
0 -0.720000029 0.100000001 -1 -0.921536028 0.0381250978 -6.06416321
0 0.0199999996 0.899999976 1 0.0663230494 0.80469805 0.171178147
0 0.0199999996 0.899999976 -1 -0.0107411742 0.814116061 -0.027590083
1 0.100000001 0.5 1 -0.072168529 0.502328992 -0.172574699
1 0.100000001 0.5 -1 0.270904154 0.458074778 0.661067009
1 -0.300000012 0.300000012 1 -0.571962714 0.215780616 -2.07695317
1 -0.300000012 0.300000012 -1 0.0229619145 0.333048135 0.0769531652
1 0.899999976 0.0500000007 1 0.773183942 0.106974348 3.81980681
1 0.899999976 0.0500000007 -1 0.958157241 0.0212614201 6.99334621
1 0 0.600000024 1 -0.119660154 0.586919188 -0.269238293
1 0 0.600000024 -1 0.119660154 0.586919129 0.269238293
1 0.550000012 0.200000003 1 0.222747371 0.280357122 0.80703187
1 0.550000012 0.200000003 -1 0.770455182 0.114486009 3.57371354
1 -0.720000029 0.100000001 1 -0.853422523 0.0559589863 -6.06416321
1 -0.720000029 0.100000001 -1 -0.496819913 0.157886803 -2.63632369
1 0.0199999996 0.899999976 1 0.00364043191 0.901790857 0.012986864
1 0.0199999996 0.899999976 -1 0.0366423912 0.895962775 0.130601197
"""


def test_contempt_follows_lc0s_rules_for_names_and_defaults():
    """lc0's GetContempt: UCI_RatingAdv unless Contempt has a value without a name (the last
    before a match) or a name UCI_Opponent contains (case-insensitive, the first one wins)."""
    opponent = "none none computer Stockfish 15.1"
    assert ct.contempt_of(opponent, "", 35) == 35
    assert ct.contempt_of(opponent, "leela=-50,stockfish=150,30", 0) == 150
    assert ct.contempt_of(opponent, "STOCKFISH=120,fish=60", 0) == 120  # first match
    assert ct.contempt_of(opponent, "80,leela=-50", 0) == 80  # a value without a name
    assert ct.contempt_of(opponent, "stockfish=150,30", 0) == 150  # the match ends the list
    assert ct.contempt_of("", "=70,leela=-50", 10) == 10  # no opponent: no name matches
    assert ct.contempt_of(opponent, "12.5abc", 0) == 12.5  # std::stof reads the number only
    for bad in ("abc", "a=b=c", "stockfish=x"):
        with pytest.raises(opts.OptionError, match="Contempt"):
            ct.contempt_of(opponent, bad, 0)


@pytest.mark.parametrize(("args", "expected"), LC0_ACCURATE)
def test_draw_rate_model_parameters_are_lc0s(args, expected):
    got = ct.accurate_params(*args)
    assert (got.ratio, got.diff) == pytest.approx(expected, rel=1e-6)


@pytest.mark.parametrize(("args", "expected"), LC0_SIMPLIFIED)
def test_elo_model_parameters_are_lc0s(args, expected):
    got = ct.simplified_params(*args)
    assert (got.ratio, got.diff) == pytest.approx(expected, rel=1e-6)


def test_the_options_choose_the_model_and_the_contempt():
    v = dict(opts.defaults())
    assert ct.rescale_params(v) == ct.WdlRescaleParams(1.0, 0.0)
    v.update(UCI_Opponent="GM Stockfish", Contempt="stockfish=150,30", WDLCalibrationElo=1900.0)
    assert ct.rescale_params(v) == ct.simplified_params(150, 0.5, 1900, 420, 1.0)
    v.update(WDLCalibrationElo=0.0, ContemptMaxValue=100.0)  # clamped to 100
    assert ct.rescale_params(v) == ct.accurate_params(100, 0.0, 0.5, 0.65, 420, 1.0)
    assert from_options({"UCI_RatingAdv": 100}).wdl_rescale == ct.accurate_params(
        100, 0.0, 0.5, 0.65, 420, 1.0
    )


def test_wdl_rescale_is_lc0s_to_a_few_float32_steps():
    """lc0's WDLRescale (its FastLog and FastLogistic in float32), forwards and inverted, within
    2.4e-7 (a unit or two of the last place) of lc0's compiled code."""
    rows = np.array([line.split() for line in LC0_RESCALE.split("\n") if line], np.float64)
    for invert in (False, True):
        r = rows[rows[:, 0] == invert]
        v, d, mu = ct.wdl_rescale(r[:, 1], r[:, 2], 1.3, 0.8744489, r[:, 3], invert, 1.4)
        assert np.abs(v - r[:, 4]).max() < 1e-6
        assert np.abs(d - r[:, 5]).max() < 1e-6
        assert np.abs(mu - r[:, 6]).max() < 2e-6


def test_wdl_rescale_leaves_extreme_and_value_only_results():
    """A WDL with W, D or L within 1e-4 of 0 or 1 (a decided position, a network without a WDL
    head: D = 0) stays as it is, as lc0's."""
    v = np.array([0.99999, -1.0, 0.3], np.float32)
    d = np.array([0.0, 0.0, 0.0], np.float32)
    nv, nd, mu = ct.wdl_rescale(v, d, 2.0, 1.5, 1.0, False, 1.4)
    assert (nv == v).all() and (nd == d).all() and (mu == 0).all()


def test_contempt_mode_chooses_the_favoured_side():
    p = ct.WdlRescaleParams(1.0, 0.8)
    white_root = ct.for_search(ct.PLAY, p, 1.4, 1.0, True, False)
    black_root = ct.for_search(ct.PLAY, p, 1.4, 1.0, False, False)
    assert (white_root.root_sign, white_root.diff) == (1.0, 0.8)
    assert (black_root.root_sign, black_root.diff) == (1.0, 0.8)
    assert ct.for_search(ct.PLAY, p, 1.4, 1.0, True, True).diff == 0.0  # go infinite: none
    assert ct.for_search(ct.WHITE, p, 1.4, 1.0, False, True).root_sign == -1.0
    assert ct.for_search(ct.BLACK, p, 1.4, 1.0, False, False).root_sign == 1.0
    off = ct.for_search(ct.NONE, ct.WdlRescaleParams(1.3, 0.8), 1.4, 1.0, True, False)
    assert off.diff == 0.0 and off.active  # the ratio still applies
    assert not ct.for_search(ct.NONE, p, 1.4, 1.0, True, False).active


def test_the_network_values_are_rescaled_for_the_side_that_moved_into_them():
    """A leaf at an odd depth was moved into by the root's side: the contempt it favours
    raises that side's value there, and its opponent's value at even depths."""
    rescale = ct.for_search(ct.PLAY, ct.WdlRescaleParams(1.0, 0.8), 1.4, 1.0, True, False)
    q = np.full(4, 0.1, np.float32)  # the side to move's value
    d = np.full(4, 0.4, np.float32)
    out = rescale.apply(NetworkOutput(np.zeros((4, 1)), q, d, np.zeros(4)), np.arange(4))
    # depth 0 and 2: White to move, the side contempt favours; depth 1 and 3: Black.
    assert out.q[0] == out.q[2] > 0.1 and out.q[1] == out.q[3] < 0.1
    v, dd, _ = ct.wdl_rescale(-q[:1], d[:1], 1.0, 0.8, -1.0, False, 1.4)
    assert out.q[0] == -v[0] and out.d[0] == dd[0]
    assert (q == 0.1).all(), "expected the network's arrays untouched"


def test_reports_take_the_contempt_back():
    """WDLEvalObjectivity 1 (the default) reports the root's move with the contempt's shift
    taken back; 0 reports the values the search used."""
    rescale = ct.for_search(ct.PLAY, ct.WdlRescaleParams(1.0, 0.8), 9.0, 1.0, True, False)
    q = np.array([-0.2], np.float32)  # the position after the root's move, its mover's view
    out = rescale.apply(NetworkOutput(np.zeros((1, 1)), q, np.array([0.5], np.float32),
                                      np.zeros(1)), np.array([1]))  # fmt: skip
    used_wl, used_d = -float(out.q[0]), float(out.d[0])
    assert used_wl > 0.25
    wl, d, _ = rescale.reported(used_wl, used_d)
    # Back within lc0's fast log and logistic (each off the exact by about 1e-3).
    assert wl == pytest.approx(0.2, abs=5e-3) and d == pytest.approx(0.5, abs=5e-3)
    subjective = ct.WdlRescale(1.0, 0.8, 1.0, 9.0, 0.0)
    assert subjective.reported(used_wl, used_d)[0] == pytest.approx(used_wl, abs=5e-3)


def test_the_nn_cache_keeps_values_of_one_rescaling():
    cache = NNCache(100)
    cache.arrays.meta[1] = 5  # five entries stored
    cache.hold_values_of(None)
    assert len(cache) == 5
    cache.hold_values_of((1.0, 0.8, 1.4))
    assert len(cache) == 0 and cache.values_key == (1.0, 0.8, 1.4)
    white = ct.for_search(ct.PLAY, ct.WdlRescaleParams(1.0, 0.8), 1.4, 1.0, True, False)
    black = ct.for_search(ct.PLAY, ct.WdlRescaleParams(1.0, 0.8), 1.4, 1.0, False, False)
    assert white.cache_key(True) == (1.0, 0.8, 1.4) != black.cache_key(False)
    # Contempt for White: the same values whichever side is to move at the root.
    for_white = ct.for_search(ct.WHITE, ct.WdlRescaleParams(1.0, 0.8), 1.4, 1.0, False, False)
    assert for_white.cache_key(False) == white.cache_key(True)
