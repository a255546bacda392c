"""The random backend's options (lc0's ``--backend-opts`` for ``--backend=random``): ``delay``
(milliseconds a batch: a simulated accelerator) and ``seed``; unknown keys and bad values are
refused with the key named."""

from __future__ import annotations

import time

import chess
import numpy as np
import pytest

from engine.backend import INPUT_PLANES, OptionError, load_network
from engine.backends.random import OPTIONS, RandomNetwork, load, parse_options


def _planes(n: int = 4) -> np.ndarray:
    planes = (np.random.default_rng(7).random((n, INPUT_PLANES, 8, 8)) < 0.1).astype(np.float32)
    planes[:, 109] = 0.25  # a constant plane (rule50-like)
    return planes


def _same(a, b) -> bool:
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("policy", "q", "d", "m"))


def test_defaults_and_no_argument_constructor():
    assert parse_options("") == {"delay": 0.0, "seed": 0, "lc0": 0}
    net = RandomNetwork()
    assert net.delay_ms == 0.0 and net.seed == 0
    assert net.attributes().description == ()
    assert _same(net.evaluate(_planes()), load("ignored.pb.gz", "").evaluate(_planes()))


def test_delay_is_applied_and_outputs_do_not_change():
    planes = _planes()
    net = load_network("ignored", "delay=20", backend="random")
    assert isinstance(net, RandomNetwork) and net.delay_ms == 20.0
    start = time.perf_counter()
    delayed = net.evaluate(planes)
    assert time.perf_counter() - start >= 0.020  # a lower bound only
    assert _same(delayed, RandomNetwork().evaluate(planes))
    assert "delay 20 ms" in net.attributes().description[0]


def test_the_delay_models_one_device_that_calls_take_in_turn():
    """Issue 65 item 5: calls made at once on several threads share the one simulated device,
    as batches on one GPU stream: 12 calls of 10 ms from 4 threads take at least 120 ms
    (each sleeping on its own, they took about 30), packed and float planes alike."""
    from concurrent.futures import ThreadPoolExecutor

    net = load("", "delay=10")
    planes = _planes()
    masks = np.zeros((len(planes), 112), np.uint64)
    values = np.zeros((len(planes), 112), np.float32)
    calls = [lambda: net.evaluate(planes), lambda: net.evaluate_packed(masks, values)] * 6
    start = time.perf_counter()
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda call: call(), calls))
    assert time.perf_counter() - start >= 12 * 0.010


def test_fractional_delay_and_seed():
    assert parse_options(" delay = 2.5 , seed=7 ") == {"delay": 2.5, "seed": 7, "lc0": 0}
    planes = _planes()
    seeded = load("", "seed=7")
    assert _same(seeded.evaluate(planes), load("", "seed=7").evaluate(planes))  # deterministic
    assert not np.array_equal(
        seeded.evaluate(planes).policy, RandomNetwork().evaluate(planes).policy
    )


def test_unknown_key_names_it_and_the_allowed_keys():
    with pytest.raises(OptionError) as err:
        load("", "delay=1,max_batch=64")
    message = str(err.value)
    assert "'max_batch'" in message and "expected one of delay, seed, lc0" in message
    assert {o.name for o in OPTIONS} == {"delay", "seed", "lc0"}


@pytest.mark.parametrize(
    "text, key, value",
    [
        ("delay=abc", "delay", "'abc'"),
        ("delay=-1", "delay", "'-1'"),
        ("delay=nan", "delay", "'nan'"),
        ("delay=inf", "delay", "'inf'"),
        ("delay=", "delay", "''"),
        ("seed=1.5", "seed", "'1.5'"),
        ("seed=-3", "seed", "'-3'"),
        ("lc0=2", "lc0", "'2'"),
        ("lc0=yes", "lc0", "'yes'"),
    ],
)
def test_bad_values_name_the_key_and_the_value(text, key, value):
    with pytest.raises(OptionError, match=f"backend option {key}: expected .*, got {value}$"):
        load("", text)


def test_malformed_and_repeated_items():
    with pytest.raises(OptionError, match="expected delay=VALUE"):
        load("", "delay")
    with pytest.raises(OptionError, match="given twice"):
        load("", "delay=1,delay=2")


def test_uci_reports_a_bad_backend_opts_and_goes_on():
    """``--backend=random --backend-opts=...`` through the engine's command line and UCI loop (in
    process): a bad option is an ``info string error`` naming it, every go answers bestmove 0000,
    and a corrected BackendOptions loads the network with its delay."""
    import io

    import chess

    from engine.startup.cmdline import parse_command_line
    from engine.uci import UciEngine

    values = parse_command_line(["--backend=random", "--backend-opts=delay=5,speed=2"])
    out = io.StringIO()
    uci = UciEngine(out, values)

    def answer(line: str) -> list[str]:
        start = out.tell()
        uci.handle(line)
        uci.controller.wait(timeout=30)
        return out.getvalue()[start:].splitlines()

    try:
        lines = answer("isready")
        errors = [line for line in lines if line.startswith("info string error:")]
        assert len(errors) == 1 and lines[-1] == "readyok", lines
        assert "OptionError" in errors[0] and "'speed'" in errors[0]
        assert "expected one of delay, seed" in errors[0]
        assert answer("go nodes 5")[-1] == "bestmove 0000"
        lines = answer("setoption name BackendOptions value delay=1")
        lines += answer("go nodes 5")
        assert any("random backend: delay 1 ms a batch" in line for line in lines), lines
        move = lines[-1].split()[1]
        assert chess.Move.from_uci(move) in chess.Board().legal_moves, lines
    finally:
        uci.handle("quit")


def test_a_delay_makes_it_an_accelerator_for_the_search():
    """With a delay a batch costs the same whatever its rows: the search is told so (every
    call costs lc0's GPU minibatch, its padding to prefetch into), while without one it is a
    CPU backend."""
    from engine.search.params import SearchParams

    cpu, gpu = load("", "").attributes(), load("", "delay=1").attributes()
    assert cpu.padded_size is not None and cpu.padded_size(1) == cpu.preferred_batch
    assert gpu.padded_size is not None
    assert gpu.padded_size(1) == gpu.padded_size(256) == 256 < gpu.padded_size(300) == 300
    params = SearchParams()
    assert params.batch_size(cpu.max_batch, cpu.preferred_batch) == 7
    assert params.batch_size(gpu.max_batch, gpu.preferred_batch) == 256


def test_packed_planes_give_the_outputs_of_the_expanded_ones():
    """The search hands the random backend lc0's packed planes (a mask and a value a plane):
    its outputs are those of the float planes they expand to, for positions with history,
    in canonical and classical formats, at any seed; a zero value on a full mask (rule50 0)
    counts as an empty plane, as in the floats."""
    from engine.board import game_rows
    from engine.encoding.rows import FILL_FEN_ONLY, encode_packed, expand_into

    boards = []
    for moves in ([], ["e2e4", "e7e5", "g1f3", "b8c6"], ["d2d4", "g8f6", "c2c4", "e7e6", "b1c3"]):
        board = chess.Board()
        for m in moves:
            board.push_uci(m)
        boards.append(board)
    for fmt in (1, 3, 4):
        masks = np.zeros((len(boards), INPUT_PLANES), np.uint64)
        values = np.zeros((len(boards), INPUT_PLANES), np.float32)
        planes = np.zeros((len(boards), INPUT_PLANES, 8, 8), np.float32)
        for k, board in enumerate(boards):
            rows = game_rows(board)
            encode_packed(rows, len(rows) - 1, fmt, FILL_FEN_ONLY, masks[k], values[k])
            expand_into(masks[k], values[k], planes[k])
        assert (masks[:, 109] == np.uint64(2**64 - 1)).all() and values[0, 109] == 0  # rule50
        for seed in ("", "seed=7"):
            net = load("", seed)
            packed, floats = net.evaluate_packed(masks, values), net.evaluate(planes)
            for head in ("policy", "q", "d"):
                np.testing.assert_array_equal(getattr(packed, head), getattr(floats, head))


def test_lc0_outputs_are_lc0s_random_backends():
    """``lc0=1``: the outputs lc0 --backend=random printed (VerboseMoveStats after ``position
    startpos moves e2e4``, ``go nodes 1``, v0.33.0-dev 909a4082): the root's V 0.5434 and Q
    0.54337, its priors at PolicySoftmaxTemp 1.359 (g8h6 9.88 %, b8a6 7.84 %, e7e5 7.43 %,
    e7e6 1.65 %); packed and float planes alike; no padding (lc0's prefetch then)."""
    from engine.encoding.rows import encode_boards, legal_moves_and_indices
    from engine.search.core.backup import fast_softmax

    board = chess.Board()
    board.push_uci("e2e4")
    net = load("", "lc0=1")
    assert net.attributes().padded_size is None
    moves, indices = legal_moves_and_indices(board)
    out = net.evaluate(encode_boards([board]), np.array([indices], np.int32))
    assert round(float(out.q[0]), 5) == 0.54337
    logits = out.policy[0] - out.policy[0].max()
    fast_softmax(logits, np.int32(len(moves)), np.float32(1.0 / np.float32(1.359)))
    prior = {m.uci(): round(100 * float(p), 2) for m, p in zip(moves, logits, strict=True)}
    assert (prior["g8h6"], prior["b8a6"], prior["e7e5"], prior["e7e6"]) == (9.88, 7.84, 7.43, 1.65)
    packed = net.evaluate_packed(*_packed_of(board), np.array([indices], np.int32))
    assert _same(packed, out)
    default = RandomNetwork().evaluate(encode_boards([board]), np.array([indices], np.int32))
    assert not _same(out, default)


def _packed_of(board: chess.Board) -> tuple[np.ndarray, np.ndarray]:
    """The engine's packed planes of ``board`` (the encoder the search uses)."""
    from engine.board import game_rows
    from engine.encoding.rows import FILL_FEN_ONLY, encode_packed

    rows = game_rows(board)
    masks = np.zeros((1, 112), np.uint64)
    values = np.zeros((1, 112), np.float32)
    encode_packed(rows, len(rows) - 1, 1, FILL_FEN_ONLY, masks[0], values[0])
    return masks, values
