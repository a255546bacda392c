"""Our search against lc0's own on the same positions, network and node budget.

Truth: lc0's root visit statistics after ``go nodes 400`` with Maia-1900 at lc0's defaults
(``../shared/lc0/search/lc0-maia-1900-n400.jsonl.gz``), and, for positions outside ../shared,
the same made by ``bin/check/lc0-root-stats`` with the lc0 build in ../shared/tools
(``tests/data/lc0-maia-1900-*.jsonl.gz``: random positions, and positions inside games where
each search continues the previous one's tree). lc0 against itself at other thread and
minibatch settings agrees on 98.3 % of best moves at a mean visit-share distance of 0.027.

Everything runs at our default options: a user must not need to set one to search like lc0.
Each search runs on a clock at the pace lc0 recorded the file at (fidelity.RECORDED_PACE):
lc0's smart pruning may stop a ``go nodes`` search only from 200 ms after the first evaluation,
so on the host's clock the tree sizes, and with them the visit shares, follow the host's speed
(a fast AVX-512 host reached 400 nodes before that and failed the in-game check at 0.061).
"""

from __future__ import annotations

import pytest
from conftest import REPO_ROOT, need_shared
from xlazero_perf import fidelity

from engine.search import from_options

SAME_BEST_MIN = 0.97
MEAN_DISTANCE_MAX = 0.04
DATA = REPO_ROOT / "tests" / "data"
TOTAL_RATIO = (0.9, 1.1)
"""Bounds of the median ratio of root visit totals (ours / lc0's); measured 0.98-1.01."""

OPTIONS = {"Threads": 1}
"""The defaults but one search thread: a repeatable comparison. lc0 recorded these with its two
threads; ours with two (the default) differ from run to run as lc0's do, and are measured with
``bin/check/fidelity --option Threads=2`` (docs/engine.md, "Fidelity")."""

FIDELITY_WORKERS = 2
"""Searches at once (engine.fidelity.compare): two keep both cores of a CI machine busy, each
search still gathering its minibatches at the default options."""

CI_EVERY = 16
"""CI searches every 16th shared position (a fixed subset of 19, all agreeing on the best move
with lc0, distance 0.025 over every 8th); --run-slow searches all 292."""

HELDOUT_SAME_BEST_MIN = 0.90
"""Best-move agreement asked of the held-out sets. Their random positions and game positions
hold more close calls than the shared set; lc0 itself, at Threads=1 MinibatchSize=32 against
its defaults, agrees on 100 % of the random positions (distance 0.017) but only on 87 % of the
game positions both runs reached (distance 0.030). Ours: docs/engine.md, "Fidelity"."""


@pytest.fixture(scope="module")
def maia1900(maia1900_net):
    """Compiled for batch size 7 only (conftest.SMALL_BUCKETS): the search gathers 7 as at the
    default options, so the comparison with lc0 is the same."""
    return maia1900_net


GAMES_DISTANCE_MAX = 0.05
"""Distance asked of the in-game searches, whose reused trees add the previous search's
differences: 0.029 over the CI's 60, 0.031 over all 120 (lc0 itself, rerun on them, 0.022)."""


def _check(
    net,
    records: list[dict],
    pace: float | None,
    same_best_min: float = SAME_BEST_MIN,
    distance_max: float = MEAN_DISTANCE_MAX,
) -> fidelity.Summary:
    assert records, "expected records with root visits"
    assert pace is not None, "expected the pace lc0 recorded the file at"
    results = fidelity.compare(net, from_options(OPTIONS), records, workers=FIDELITY_WORKERS, pace=pace)
    summary = fidelity.summarize(results)
    detail = _worst(results, 5)
    assert summary.same_best_share >= same_best_min, f"{summary.line()}; worst: {detail}"
    assert summary.mean_distance <= distance_max, f"{summary.line()}; worst: {detail}"
    # Smart pruning stops where lc0's does: root visit totals alike (a proven win or a single
    # move stops at once, a decided best move before the node limit).
    assert TOTAL_RATIO[0] <= summary.median_total_ratio <= TOTAL_RATIO[1], summary.line()
    return summary


def test_default_minibatch_is_the_backends_cpu_suggestion(maia1900):
    from backend_xla.buckets import CPU_MINIBATCH, batch_sizes
    from backend_xla.options import parse_options

    assert maia1900.device.platform == "cpu"
    assert maia1900.preferred_batch == CPU_MINIBATCH
    default_max_batch = batch_sizes(parse_options(""), CPU_MINIBATCH)[-1]
    for max_batch in (maia1900.max_batch, default_max_batch):
        assert from_options({}).batch_size(max_batch, maia1900.preferred_batch) == CPU_MINIBATCH
    # The only compiled size is the minibatch, the defaults' smallest size.
    assert maia1900.padded_size(CPU_MINIBATCH) == batch_sizes(parse_options(""), CPU_MINIBATCH)[0]


SHARED_FILE = "lc0-maia-1900-n400.jsonl.gz"


def test_fidelity_on_shared_positions(maia1900):
    records = fidelity.read_records(need_shared("search", SHARED_FILE))
    assert len(records) == 292
    _check(maia1900, records[::CI_EVERY], fidelity.pace_of(SHARED_FILE))


@pytest.mark.slow
def test_fidelity_on_all_shared_positions(maia1900):
    records = fidelity.read_records(need_shared("search", SHARED_FILE))
    _check(maia1900, records, fidelity.pace_of(SHARED_FILE))


def _heldout(name: str) -> list[dict]:
    return fidelity.read_records(DATA / f"lc0-maia-1900-n400-{name}.jsonl.gz")


def _pace(name: str) -> float | None:
    return fidelity.pace_of(DATA / f"lc0-maia-1900-n400-{name}.jsonl.gz")


def test_fidelity_on_heldout_random_positions(maia1900):
    """Positions after 1-80 random plies, not in ../shared (bin/check/lc0-root-stats --random-positions
    60 --seed 2026); every second one in CI (96.7 %, 0.028). Every third one sat at the bounds
    (90 %, 0.038), too few for a fair test; all 59 (--run-slow) give 94.9 % and 0.024."""
    records = _heldout("random")
    assert len(records) == 59  # one position with a single legal move has no visits
    _check(maia1900, records[::2], _pace("random"), HELDOUT_SAME_BEST_MIN)


def test_fidelity_inside_games_with_tree_reuse(maia1900):
    """Searches that continue the previous one (position ... moves ..., no ucinewgame), as in a
    game: tree reuse, and go nodes counting the reused visits as lc0 does. Two of the four
    games (60 searches) in CI."""
    records = [r for r in _heldout("games") if r["game"] < 2]
    assert len(records) == 60 and any(r["total"] >= 400 for r in records)
    _check(maia1900, records, _pace("games"), HELDOUT_SAME_BEST_MIN, GAMES_DISTANCE_MAX)


@pytest.mark.slow
def test_fidelity_on_all_heldout_positions(maia1900):
    _check(maia1900, _heldout("random"), _pace("random"), HELDOUT_SAME_BEST_MIN)
    _check(maia1900, _heldout("games"), _pace("games"), HELDOUT_SAME_BEST_MIN, GAMES_DISTANCE_MAX)


# ------------------------------------------------------------------------------ WDL contempt
EXACT = {"Threads": 1, "MinibatchSize": 7, "SmartPruningFactor": 0.0}
"""lc0's exact reference settings (one search thread, its CPU minibatch, no smart pruning):
lc0 reproduces its own root visits there (distance 0.001 between two recordings)."""

CONTEMPT: dict[str, dict] = {
    "play": {"Contempt": "100"},
    "opponent": {
        "WDLCalibrationElo": 1900.0,
        "UCI_Opponent": "none none computer Stockfish 15.1",
        "Contempt": "leela=-50,stockfish=150,30",
    },
    "mode": {
        "ContemptMode": "black_side_analysis",
        "UCI_RatingAdv": 150.0,
        "WDLDrawRateTarget": 0.65,
        "WDLBookExitBias": 0.3,
    },
    "ratio": {
        "ContemptMode": "disable",
        "Contempt": "300",
        "WDLCalibrationElo": 2400.0,
        "WDLMaxS": 1.2,
    },
}
"""The contempt settings of ``tests/data/lc0-maia-1900-n400-contempt-NAME.jsonl.gz``: lc0's
root visits on the same 100 random positions (``--random-positions 100 --seed 65``) after
``go nodes 400``, recorded with lc0's options at EXACT and these (``none``: without them), by
``bin/check/lc0-root-stats --arg=--threads=1 --arg=--minibatch-size=7
--arg=--smart-pruning-factor=0 --random-positions 100 --seed 65`` and

- play: ``--arg=--contempt=100`` (ContemptMode play: the side to move at the root favoured;
  lc0's draw-rate model);
- opponent: ``--arg=--wdl-calibration-elo=1900 --setoption 'UCI_Opponent=none none computer
  Stockfish 15.1' --setoption 'Contempt=leela=-50,stockfish=150,30'`` (the named contempt,
  150, in lc0's Elo model);
- mode: ``--arg=--contempt-mode=black_side_analysis --setoption UCI_RatingAdv=150
  --arg=--wdl-draw-rate-target=0.65 --arg=--wdl-book-exit-bias=0.3`` (Black favoured whoever is
  to move; the contempt from UCI_RatingAdv);
- ratio: ``--arg=--contempt-mode=disable --arg=--contempt=300 --arg=--wdl-calibration-elo=2400
  --arg=--wdl-max-s=1.2`` (no side: the sharpness alone).

These settings move lc0's own visits from ``none`` by 0.150, 0.101, 0.169 and 0.134 (12 to 21
best moves in 100 change). Ours against lc0 on all 100 (bin/check/fidelity with the same options):
play 95 % of best moves, distance 0.035; opponent 99 %, 0.014; mode 97 %, 0.025; ratio 96 %,
0.024; none 100 %, 0.0095 (2026-12-03, with lc0's cache key: no rule50 count)."""

CONTEMPT_EVERY = 8
"""CI searches every 8th position (13) of one setting, CI_CONTEMPT: 92 %, 0.017 (play had 92 %,
0.029 and opponent 100 %, 0.004 there). --run-slow searches all four in full, and the one
without."""

CI_CONTEMPT = "mode"
"""The setting CI searches: the one that sets the most options (the contempt mode, its side
fixed whoever is to move, the contempt from UCI_RatingAdv, the draw-rate target and the book-exit
bias) and moves lc0's own visits the most (0.169). The search rescales every setting's values
through the same path; what differs between them is the rescaling's parameters and the favoured
side, which tests/engine/search/test_contempt.py checks against lc0's own functions for each
model and mode (the draw-rate model of play, the Elo model of opponent). play and opponent are
searched under --run-slow, on all 100 positions."""

CONTEMPT_SAME_BEST_MIN = 0.95
CONTEMPT_DISTANCE_MAX = 0.05
"""Issue 66's bounds over 100 positions; a CI subset of 13 has one miss in 13 (92 %) at most."""


def _contempt(name: str) -> list[dict]:
    return _heldout(f"contempt-{name}")


def _worst(results: list[fidelity.Comparison], k: int) -> str:
    """The ``k`` positions furthest from lc0's visits, for an assertion's message."""
    worst = sorted(results, key=lambda c: -c.distance)[:k]
    return "; ".join(
        f"#{c.index} lc0 {c.bestmove_ref} ours {c.bestmove} d={c.distance:.3f}" for c in worst
    )


def _check_contempt(net, name: str, records: list[dict], same_best_min: float) -> None:
    options = {**EXACT, **CONTEMPT.get(name, {})}
    results = fidelity.compare(net, from_options(options), records, workers=FIDELITY_WORKERS)
    summary = fidelity.summarize(results)
    detail = _worst(results, 3)
    assert summary.same_best_share >= same_best_min, f"{name}: {summary.line()}; worst: {detail}"
    assert summary.mean_distance <= CONTEMPT_DISTANCE_MAX, f"{name}: {summary.line()}; {detail}"


def test_contempt_moves_lc0s_own_visits_beyond_the_bound():
    """The recordings test something: each setting moves lc0's visits from its search without
    contempt by far more than CONTEMPT_DISTANCE_MAX (no search here)."""
    plain = {r["index"]: r for r in _contempt("none")}
    for name in CONTEMPT:
        records = _contempt(name)
        assert len(records) == 100 and {r["index"] for r in records} == set(plain)
        moved = [fidelity.visit_distance(plain[r["index"]]["visits"], r["visits"]) for r in records]
        assert sum(moved) / len(moved) > 2 * CONTEMPT_DISTANCE_MAX, name


def test_contempt_follows_lc0s_visits(maia1900):
    """Issue 66: WDL contempt as lc0 computes it, against lc0's root visits with the same
    options (CONTEMPT's CI_CONTEMPT), on every CONTEMPT_EVERY-th position. Without the contempt
    these positions are 0.166 from lc0's visits (lc0's own recordings with and without it)."""
    records = _contempt(CI_CONTEMPT)[::CONTEMPT_EVERY]
    plain = {r["index"]: r for r in _contempt("none")}
    moved = [fidelity.visit_distance(plain[r["index"]]["visits"], r["visits"]) for r in records]
    assert sum(moved) / len(moved) > 2 * CONTEMPT_DISTANCE_MAX  # a search without it would fail
    _check_contempt(maia1900, CI_CONTEMPT, records, 12 / 13)


@pytest.mark.slow
@pytest.mark.parametrize("name", [*CONTEMPT, "none"])
def test_contempt_follows_lc0s_visits_on_all_positions(maia1900, name):
    _check_contempt(maia1900, name, _contempt(name), CONTEMPT_SAME_BEST_MIN)
