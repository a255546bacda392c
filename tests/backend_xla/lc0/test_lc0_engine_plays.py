"""The engine plays with every lc0 weight file in ../shared: ``go nodes 100`` gives a legal bestmove,
and the positions reach the network encoded in the network's own input format.

What is checked depends on the input format, not on the architecture (test_backend_zoo.py
checks every architecture against lc0's outputs): CI runs each input format once (the zoo's
``-inputN`` files, one file of the classical format) and two of the nine Maias; the other files
(other architectures and weights in a format already run) run with --run-slow."""

from __future__ import annotations

import numpy as np
import pytest

import backend_xla
from conftest import LC0, board_of, read_jsonl
from engine.encoding import encode_planes
from engine.search import Limit, Search, from_options
from lc0w_helpers import shared

WEIGHT_FILES = sorted(str(p.relative_to(LC0)) for p in LC0.glob("*/*.pb.gz")) if LC0.is_dir() else []
CI_MAIAS = ("maia/maia-1100.pb.gz", "maia/maia-1900.pb.gz")


CI_CLASSICAL = "zoo/se-b3f48-polconv-wdl-mlh-relu.pb.gz"


def _marked(name: str):
    if name.startswith("maia/"):
        slow = name not in CI_MAIAS
    else:
        slow = "-input" not in name and name != CI_CLASSICAL
    return pytest.param(name, marks=pytest.mark.slow) if slow else name
OPTIONS = "batch_buckets=7,background_compile=0,host_devices=1,conv_method=lax"
"""One size (the minibatch of 7; the root pads to it), on one device, XLA's own convolution:
what is checked here (encoding, legal moves) depends neither on the devices, and a second device
would compile a second copy of every program (tests/backend_xla/test_backend_concurrency.py
covers those), nor on the convolution's formulation, whose Winograd programs take twice as long
to compile (test_backend_zoo.py checks them against lc0 on every network)."""
HISTORY_POSITION = 9
"""A shared position with moves played (history planes differ between formats)."""


class RootSpy:
    """Passes evaluations through and keeps the first batch (the root alone)."""

    def __init__(self, net) -> None:
        self.net, self.first = net, None
        self.input_format, self.has_wdl, self.has_mlh = net.input_format, net.has_wdl, net.has_mlh

    def attributes(self):
        return self.net.attributes()

    def evaluate(self, planes: np.ndarray):
        if self.first is None:
            self.first = planes.copy()
        return self.net.evaluate(planes)


@pytest.mark.parametrize("name", [_marked(n) for n in WEIGHT_FILES] or ["<../shared absent>"])
def test_engine_plays_nodes_100_in_the_networks_input_format(name):
    net = backend_xla.load_network(shared(*name.split("/")), OPTIONS)
    record = read_jsonl(shared("positions.jsonl"))[HISTORY_POSITION]
    board = board_of(record)
    assert board.move_stack, "the chosen position must carry history"
    spy = RootSpy(net)
    search = Search(spy, from_options({}))
    search.set_position(board)
    result = search.run(Limit(nodes=100))
    assert result.bestmove in board.legal_moves
    np.testing.assert_array_equal(spy.first[0], encode_planes(board, net.input_format))
    if "input" in name:  # the zoo's input-format nets say their format in the name
        assert f"input{net.input_format}-" in name
