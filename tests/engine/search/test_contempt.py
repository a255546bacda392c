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
from engine.search import contempt as ct
from engine.search.core.rescale import rescale
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


def _rescaled(v, d, ratio: float, diff: float, sign, invert: bool, max_s: float):
    """core/rescale.py's compiled WDLRescale of each row (``sign`` one for all, or one a row):
    arrays of v, d and mu."""
    v, d = np.asarray(v), np.asarray(d)
    signs = np.broadcast_to(np.asarray(sign, np.float64), v.shape)
    rows = [rescale(a, b, ratio, diff, c, invert, max_s) for a, b, c in zip(v, d, signs)]
    out = np.array(rows, np.float32).reshape(-1, 3)
    return out[:, 0], out[:, 1], out[:, 2]


# lc0's WDLRescale in numpy, every step float32, as utils/fastmath.h and search.cc write it: the
# compiled rescaling (one WDL at a time, no Python) must be this arithmetic bit for bit.
F32 = np.float32


def _np_fast_log(a):
    bits = np.asarray(a, F32).view(np.uint32)
    expb = (bits >> np.uint32(23)).astype(F32)
    out = ((bits & np.uint32(0x7FFFFF)) | np.uint32(0x7F << 23)).view(F32) - F32(1.0)
    log2 = out * (F32(1.3465552) - F32(0.34655523) * out) - F32(127.0) + expb
    return F32(0.6931471805599453) * log2


def _np_fast_exp2(a):
    a = np.asarray(a, F32)
    e = np.where(a < 0, a - F32(1.0), a).astype(np.int32)
    f = a - e.astype(F32)
    out = (F32(1.0) + f * (F32(0.6602339) + F32(0.33976606) * f)).astype(F32)
    bits = (out.view(np.int32).astype(np.int64) + (e.astype(np.int64) << 23)).astype(np.int32)
    return np.where(a < F32(-126), F32(0.0), bits.view(F32))


def _np_fast_logistic(a):
    a = np.asarray(a, F32)
    mid = F32(1.0) / (F32(1.0) + _np_fast_exp2(F32(1.442695040) * -np.clip(a, -20, 20)))
    return np.where(a > F32(20), F32(1.0), np.where(a < F32(-20), F32(0.0), mid))


def _np_rescale(v, d, ratio, diff, sign, invert, max_s):
    v, d = np.asarray(v, F32), np.asarray(d, F32)
    ratio32, diff32, eps = F32(ratio), F32(diff), F32(0.0001)
    if invert:
        diff32, ratio32 = -diff32, F32(1.0) / ratio32
    w = (F32(1.0) + v - d) / F32(2.0)
    l = (F32(1.0) - v - d) / F32(2.0)
    top = F32(1.0) - eps
    ok = (w > eps) & (d > eps) & (l > eps) & (w < top) & (d < top) & (l < top)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        a = _np_fast_log(np.where(ok, F32(1.0) / l - F32(1.0), F32(1.0)))
        b = _np_fast_log(np.where(ok, F32(1.0) / w - F32(1.0), F32(1.0)))
        s = np.where(ok, F32(2.0) / (a + b), F32(1.0))
        if not invert:
            s = np.minimum(F32(max_s), s)
        mu = np.where(ok, (a - b) / (a + b), F32(0.0))
        s_new = s * ratio32
        if invert:
            s, s_new = s_new, s
            s = np.minimum(F32(max_s), s)
        mu_new = mu + np.asarray(sign, F32) * s * s * diff32
        w_new = _np_fast_logistic((F32(-1.0) + mu_new) / s_new)
        l_new = _np_fast_logistic((F32(-1.0) - mu_new) / s_new)
    v_new = np.where(ok, w_new - l_new, v)
    d_new = np.where(ok, np.maximum(F32(0.0), F32(1.0) - w_new - l_new), d)
    return v_new.astype(F32), d_new.astype(F32), np.where(ok, mu_new, F32(0.0)).astype(F32)


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
        v, d, mu = _rescaled(r[:, 1], r[:, 2], 1.3, 0.8744489, r[:, 3], invert, 1.4)
        assert np.abs(v - r[:, 4]).max() < 1e-6
        assert np.abs(d - r[:, 5]).max() < 1e-6
        assert np.abs(mu - r[:, 6]).max() < 2e-6


def test_the_compiled_rescaling_is_lc0s_float32_arithmetic_bit_for_bit():
    """core/rescale.py against lc0's formulas in numpy (above), on 20,000 random WDLs (near
    the bounds too) for each of several ratios, diffs, signs, directions and MaxS: the same
    float32 bits, so that the search's values are those the numpy rescaling gave and lc0's."""
    rng = np.random.default_rng(66)
    n = 20_000
    d = rng.random(n).astype(F32)
    d[: n // 10] = rng.random(n // 10).astype(F32) * F32(0.001)  # near the bounds
    v = ((rng.random(n) * 2 - 1) * (1 - d)).astype(F32)
    rows = np.arange(n)
    for ratio, diff, max_s in ((1.3, 0.8744489, 1.4), (0.47, 3.7, 9.0), (3.45, -1.2, 1.4)):
        for invert in (False, True):
            sign = np.where(rows % 2, 1.0, -1.0)
            expected = _np_rescale(v, d, ratio, diff, sign, invert, max_s)
            got = _rescaled(v, d, ratio, diff, sign, invert, max_s)
            for e, g in zip(expected, got):
                # Where a + b is 0 the inverse's spread is infinite and the WDL not a number: the
                # same rows give NaN here, and D 0 where numpy's maximum gave NaN (lc0's
                # std::max(0.0f, NaN) is 0, as the compiled max).
                nan = np.isnan(e)
                assert (np.isnan(g) | (g == 0))[nan].all(), (ratio, invert)
                same = e[~nan].view(np.int32) == g[~nan].view(np.int32)
                assert same.all(), (ratio, invert, np.nonzero(~same)[0][:5])


def test_the_network_rows_are_rescaled_by_depth_as_the_scalar_rescaling():
    """rescale_rows (a batch as it leaves the network) is the scalar rescaling of each row in
    the view of the side that moved into it, with that side's sign."""
    rescale_ = ct.for_search(ct.PLAY, ct.WdlRescaleParams(1.3, 0.8), 1.4, 1.0, True, False)
    rng = np.random.default_rng(7)
    d = (rng.random(64) * 0.8).astype(F32)
    q = ((rng.random(64) * 2 - 1) * (1 - d)).astype(F32)
    depths = rng.integers(0, 9, 64)
    out_q, out_d = rescale_.apply(q, d, depths)
    for i in range(64):
        sign = 1.0 if depths[i] % 2 else -1.0
        v, dd, _ = rescale(-q[i], d[i], 1.3, 0.8, sign, False, 1.4)
        assert out_q[i] == -v and out_d[i] == dd, i


def test_wdl_rescale_leaves_extreme_and_value_only_results():
    """A WDL with W, D or L within 1e-4 of 0 or 1 (a decided position, a network without a WDL
    head: D = 0) stays as it is, as lc0's."""
    v = np.array([0.99999, -1.0, 0.3], np.float32)
    d = np.array([0.0, 0.0, 0.0], np.float32)
    nv, nd, mu = _rescaled(v, d, 2.0, 1.5, 1.0, False, 1.4)
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
    out_q, out_d = rescale.apply(q, d, np.arange(4))
    # depth 0 and 2: White to move, the side contempt favours; depth 1 and 3: Black.
    assert out_q[0] == out_q[2] > 0.1 and out_q[1] == out_q[3] < 0.1
    v, dd, _ = _rescaled(-q[:1], d[:1], 1.0, 0.8, -1.0, False, 1.4)
    assert out_q[0] == -v[0] and out_d[0] == dd[0]
    assert (q == 0.1).all(), "expected the network's arrays untouched"


def test_reports_take_the_contempt_back():
    """WDLEvalObjectivity 1 (the default) reports the root's move with the contempt's shift
    taken back; 0 reports the values the search used."""
    rescale = ct.for_search(ct.PLAY, ct.WdlRescaleParams(1.0, 0.8), 9.0, 1.0, True, False)
    q = np.array([-0.2], np.float32)  # the position after the root's move, its mover's view
    out_q, out_d = rescale.apply(q, np.array([0.5], np.float32), np.array([1]))
    used_wl, used_d = -float(out_q[0]), float(out_d[0])
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
