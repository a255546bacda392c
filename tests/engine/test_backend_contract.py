"""The backend contract (engine.backend): every network returns one complete BackendAttributes
record, and a backend whose network does not is refused when it is loaded, with an error that
names the backend and what is missing."""

from __future__ import annotations

import chess
import numpy as np
import pytest

import engine.backend as backend
from engine.backend import ANY_CALLS, POLICY_SIZE, BackendAttributes, BackendError, load_network
from engine.backends.random import RandomNetwork


class NoAttributes:
    """A network written against the old protocol: batch sizes as attributes, no record."""

    input_format = 1
    has_wdl = True
    has_mlh = False
    max_batch = 64
    preferred_batch = 7
    evaluate = RandomNetwork.evaluate


class IncompleteAttributes(RandomNetwork):
    """A network whose record leaves out a field (concurrency)."""

    def attributes(self) -> BackendAttributes:
        return BackendAttributes(name="partial", description=(), max_batch=8,  # type: ignore[call-arg]  # the point of the test
                                 preferred_batch=8, padded_size=None)


class WrongRecord(RandomNetwork):
    def attributes(self):
        return {"name": "dict", "max_batch": 8}


@pytest.fixture
def registered(monkeypatch):
    def register(name, network_type):
        monkeypatch.setitem(backend._BACKENDS, name, lambda path, options: network_type())
    return register


def test_a_network_without_the_record_fails_at_load_naming_backend_and_member(registered):
    registered("old-style", NoAttributes)
    with pytest.raises(BackendError, match=r"backend 'old-style'.*NoAttributes.*lacks 'attributes'"):
        load_network("", backend="old-style")


def test_a_record_missing_a_field_fails_at_load_naming_backend_and_field(registered):
    registered("partial", IncompleteAttributes)
    with pytest.raises(BackendError, match=r"backend 'partial'.*concurrency"):
        load_network("", backend="partial")


def test_a_record_of_the_wrong_type_fails_at_load(registered):
    registered("dict-record", WrongRecord)
    with pytest.raises(BackendError, match=r"backend 'dict-record'.*returned dict, expected BackendAttributes"):
        load_network("", backend="dict-record")


class PackedWithoutMethod(RandomNetwork):
    """A network that declares packed input but has no evaluate_packed."""

    evaluate_packed = None

    def __getattribute__(self, name):
        if name == "evaluate_packed":
            raise AttributeError(name)
        return super().__getattribute__(name)


def test_packed_input_without_its_method_fails_at_load(registered):
    registered("packed", PackedWithoutMethod)
    with pytest.raises(BackendError, match=r"backend 'packed'.*packed_input.*'evaluate_packed'"):
        load_network("", backend="packed")


class GatherWithoutLegal(RandomNetwork):
    """A network that declares policy_gather but whose evaluate takes no ``legal``."""

    def attributes(self):
        import dataclasses

        return dataclasses.replace(super().attributes(), policy_gather=True)

    def evaluate(self, planes):
        return super().evaluate(planes)


class Gathering(GatherWithoutLegal):
    def evaluate(self, planes, legal=None):
        return super().evaluate(planes, legal)


def test_policy_gather_without_legal_fails_at_load(registered):
    """The protocol declares ``legal`` (engine.backend.Network.evaluate): a network that says it
    gathers but cannot take it fails at load, not in the middle of a search."""
    registered("gather", GatherWithoutLegal)
    with pytest.raises(BackendError, match=r"backend 'gather'.*policy_gather.*'evaluate' takes no 'legal'"):
        load_network("", backend="gather")
    registered("gathering", Gathering)
    assert load_network("", backend="gathering").attributes().policy_gather


def test_the_random_backend_gathers_the_logits_it_is_asked_for():
    from engine.encoding import encode_batch

    planes = encode_batch([chess.Board(), chess.Board("8/8/8/8/8/8/k7/7K w - - 0 1")])
    legal = np.array([[0, 5, 1857, 3], [7, 7, 2000, -1]], np.int32)  # past the ends: clipped
    net = RandomNetwork()
    whole = net.evaluate(planes)
    expected = np.take_along_axis(whole.policy, np.clip(legal, 0, POLICY_SIZE - 1), axis=1)
    np.testing.assert_array_equal(net.evaluate(planes, legal=legal).policy, expected)
    from backend_xla.packed import pack_planes

    masks, values = pack_planes(planes)
    np.testing.assert_array_equal(net.evaluate_packed(masks, values, legal=legal).policy, expected)


def test_inconsistent_batch_sizes_are_refused():
    with pytest.raises(ValueError, match=r"preferred_batch \(9\) <= max_batch \(8\)"):
        BackendAttributes(name="x", description=(), max_batch=8, preferred_batch=9,
                          padded_size=None, concurrency=1, packed_input=False, policy_gather=False, prepare=None)
    with pytest.raises(ValueError, match="concurrency >= 1"):
        BackendAttributes(name="x", description=(), max_batch=8, preferred_batch=8,
                          padded_size=None, concurrency=0, packed_input=False, policy_gather=False, prepare=None)


def test_the_record_is_frozen_and_the_random_backend_fills_every_field():
    import engine.backends  # noqa: F401  (registers "random")

    net = load_network("", backend="random")
    attributes = net.attributes()
    assert attributes == BackendAttributes(name="random", description=(), max_batch=1024,
                                           preferred_batch=7, padded_size=net.padded_size,
                                           concurrency=ANY_CALLS, packed_input=True,
                                           policy_gather=True, prepare=None)
    assert attributes.padded_size is not None and attributes.padded_size(5) == 7
    with pytest.raises(AttributeError):
        attributes.max_batch = 1  # type: ignore[misc]  # frozen: the point of the test


def _numpy_random_outputs(planes: np.ndarray):
    """The random backend's outputs written plainly with numpy: the hash of the set squares
    (packbits, read as little-endian 64-bit words) and of each plane's first value, then a
    window of the random logits and a row of the random W/D/L."""
    from engine.backends import random as rnd

    n = planes.shape[0]
    bits = np.packbits(planes.reshape(n, -1) != 0, axis=1).view(np.uint64)
    first = planes[:, :, 0, 0].view(np.uint32).astype(np.uint64)
    h = (np.concatenate([bits, first], axis=1) * rnd._HASH_WORDS).sum(axis=1, dtype=np.uint64)
    h ^= h >> np.uint64(29)
    windows = np.lib.stride_tricks.sliding_window_view(rnd._LOGITS, POLICY_SIZE)
    policy = windows[(h % np.uint64(rnd.TABLE_SIZE)).astype(np.intp)]
    w, d, l = rnd._WDL[((h >> np.uint64(32)) % np.uint64(rnd.TABLE_SIZE)).astype(np.intp)].T
    return policy, w - l, d


def test_the_random_backend_equals_its_numpy_definition_and_depends_on_the_planes_only():
    from engine.backends.random import RandomNetwork
    from engine.encoding import encode_batch

    boards = [chess.Board()]
    for uci in ("e2e4", "e7e5", "g1f3", "b8c6", "f1b5"):
        boards.append(boards[-1].copy())
        boards[-1].push_uci(uci)
    planes = encode_batch(boards)
    planes[2, 104] = 0.37  # a non-binary constant plane
    out = RandomNetwork().evaluate(planes)
    policy, q, d = _numpy_random_outputs(planes)
    np.testing.assert_array_equal(out.policy, policy)
    np.testing.assert_array_equal(out.q, q)
    np.testing.assert_array_equal(out.d, d)
    alone = RandomNetwork().evaluate(planes[3:4])
    np.testing.assert_array_equal(alone.policy[0], out.policy[3])
    assert len({float(v) for v in out.q}) == len(boards)


class BrokenHead(RandomNetwork):
    """A network with broken weights: one head (``q`` or ``policy``) is NaN for every position."""

    def __init__(self, head: str) -> None:
        super().__init__()
        self.head = head

    def evaluate(self, planes):
        return self._broken(super().evaluate(planes))

    def evaluate_packed(self, masks, values):
        return self._broken(super().evaluate_packed(masks, values))

    def _broken(self, out):
        getattr(out, self.head)[:] = np.nan
        return out


@pytest.mark.parametrize("head, name", [("q", "value"), ("policy", "policy")])
def test_a_network_whose_value_or_policy_is_nan_fails_the_search_with_a_clear_error(head, name):
    """Before, the search ran on NaN and answered a move without a word."""
    from engine.search import Limit, Search, from_options

    search = Search(BrokenHead(head), from_options({}))
    search.set_position(chess.Board())
    said: list[str] = []
    try:
        result = search.run(Limit(nodes=200), on_verbose=said.extend)
    finally:
        search.close()
    assert result.bestmove in chess.Board().legal_moves
    assert any(f"ValueError: the network's {name} is not a number" in line for line in said), said
