"""The small protocol between search and neural-network backends, and its constants.

Search depends on this package only; a backend (such as ``backend_xla``) implements
:class:`Network` and registers a loader under a name with :func:`register_backend`, the way
lc0's backends register themselves with its network factory. This package knows no
implementation: the program's entry point (``engine.uci.main``) imports the backends, which
register themselves on import.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

import numpy as np

from engine.backend.options import (
    BackendOption,
    OptionError,
    read_options,
)
from engine.backend.policy_table import POLICY_MOVES, POLICY_SIZE

INPUT_PLANES = 112
"""Number of 8x8 input planes of every lc0 input format."""

GATHER_WIDTHS = (32, 64, 128, 256)
"""The widths of the legal moves' policy indices a search passes to a network that gathers their
logits (``BackendAttributes.policy_gather``): the smallest that holds the batch's most moves (a
position has at most 218), so that a call moves 32-64 a position in most batches and a backend
has four shapes to prepare."""


@dataclass(frozen=True)
class NetworkOutput:
    """Heads of a network for a batch of N positions.

    policy: float32 [N, 1858] raw logits (before softmax); for a call given ``legal`` (a
      network whose attributes say ``policy_gather``), [N, K]: the logits of ``legal``'s indices.
    q: float32 [N], W - L from the side to move's view (or the value of a value-only net).
    d: float32 [N], draw probability (0 for a network without a WDL head).
    m: float32 [N], moves left in plies (0 for a network without a moves-left head).
    """

    policy: np.ndarray
    q: np.ndarray
    d: np.ndarray
    m: np.ndarray

    def __len__(self) -> int:
        return int(self.q.shape[0])


ANY_CALLS = 128
"""A ``BackendAttributes.concurrency`` from which a backend takes any number of calls at once."""


@dataclass(frozen=True)
class BackendAttributes:
    """What a loaded network tells the engine about itself (lc0's ``BackendAttributes``), as
    one record: every field is required, so a backend that leaves one out fails when its
    network is loaded, not by silently turning a feature off.

    name: the network's name in the load message (e.g. its file name).
    description: lines for the load message's ``info string`` (what runs where); may be empty.
    max_batch: the largest batch evaluated in one call (larger ones are split).
    preferred_batch: the minibatch the backend suggests to the search when MinibatchSize is 0
      (lc0's ``GetMiniBatchSize``): small on a CPU, where a batch costs in proportion to its
      size and a small tree gains most from each evaluation, large on a GPU, which needs width.
    padded_size: ``padded_size(n)``, the rows a batch of n costs (n rounded up to a compiled
      size; for a device whose call costs the same whatever its rows, its full batch): the
      search then fills the padding with prefetched positions. None: a batch costs its rows,
      and the search prefetches up to MaxPrefetch.
    concurrency: how many ``evaluate`` calls the backend runs at once to advantage (e.g. one
      per device); the search hands it that many of its batches at once, in the order they
      came. :data:`ANY_CALLS` or more: any number (its calls are thread-safe and need no
      queue: each search thread calls it itself).
    packed_input: whether the network takes lc0's packed planes (``evaluate_packed``: a mask of
      squares and a value a plane, 1.3 KB a position against 28 KB of floats). Otherwise the
      evaluation thread expands them into float planes for ``evaluate``, off the search's
      thread.
    policy_gather: whether ``evaluate`` and ``evaluate_packed`` take ``legal``, int32 [N, K]:
      the policy indices of each position's legal moves (entries past a position's move count
      are ignored and may hold anything), and answer with those logits alone, policy [N, K]:
      on an accelerator the device gathers them, and a call copies back K of 1858 logits a
      position. Otherwise the search reads the legal moves' logits from the whole policy.
    prepare: ``prepare(rows)`` makes ready what a batch of ``rows`` needs (a compiled size, in
      the background): the controller calls it at isready and go with the search's minibatch,
      so that a MinibatchSize above the backend's own does not first run split while its
      program compiles. None: nothing to prepare.
    """

    name: str
    description: tuple[str, ...]
    max_batch: int
    preferred_batch: int
    padded_size: Callable[[int], int] | None
    concurrency: int
    packed_input: bool
    policy_gather: bool
    prepare: Callable[[int], None] | None

    def __post_init__(self) -> None:
        if self.max_batch < 1 or not 1 <= self.preferred_batch <= self.max_batch:
            raise ValueError(
                f"backend attributes of {self.name}: expected 1 <= preferred_batch "
                f"({self.preferred_batch}) <= max_batch ({self.max_batch})"
            )
        if self.concurrency < 1:
            raise ValueError(
                f"backend attributes of {self.name}: expected concurrency >= 1, "
                f"got {self.concurrency}"
            )


@runtime_checkable
class Network(Protocol):
    """A loaded network that evaluates batches of encoded positions."""

    input_format: int
    """lc0 input format the network expects (1 = classical 112 planes)."""
    has_wdl: bool
    has_mlh: bool

    def attributes(self) -> BackendAttributes:
        """The network's :class:`BackendAttributes` (read once per load and per search)."""
        ...

    def evaluate(self, planes: np.ndarray, legal: np.ndarray | None = None) -> NetworkOutput:
        """Evaluate float32 planes [N, 112, 8, 8]; any N >= 1 (backends split large batches).
        ``legal`` (int32 [N, K], the policy indices of each position's legal moves): the search
        passes it only to a network whose attributes say ``policy_gather``, which answers with
        those logits alone, policy [N, K] (:func:`gathered` does it on the host)."""
        ...


@runtime_checkable
class PackedNetwork(Network, Protocol):
    """A network whose attributes say ``packed_input``: it also takes lc0's packed planes."""

    def evaluate_packed(
        self, masks: np.ndarray, values: np.ndarray, legal: np.ndarray | None = None
    ) -> NetworkOutput:
        """masks uint64 [N, 112] (bit 8 * rank + file: the squares of each plane), values float32
        [N, 112] (the value on them): the same as :meth:`Network.evaluate` of the expanded
        planes, ``legal`` included."""
        ...


NETWORK_MEMBERS = ("input_format", "has_wdl", "has_mlh", "attributes", "evaluate")
"""What every network provides (the :class:`Network` protocol), checked when one is loaded."""


def gathered(policy: np.ndarray, legal: np.ndarray | None) -> np.ndarray:
    """``policy`` [N, 1858] as a network that gathers answers it for ``legal`` (int [N, K]): the
    logits of those indices, [N, K] (an index outside 0..1857 reads the nearest end); ``policy``
    itself without ``legal``."""
    if legal is None:
        return policy
    return np.take_along_axis(policy, np.clip(legal, 0, policy.shape[1] - 1), axis=1)


def _takes_legal(method: Callable[..., object]) -> bool:
    import inspect

    try:
        parameters = inspect.signature(method).parameters
    except (TypeError, ValueError):
        return True  # not introspectable (a builtin): its call will say
    return "legal" in parameters or any(p.kind is p.VAR_KEYWORD for p in parameters.values())


class BackendError(TypeError):
    """A backend whose network does not keep the protocol; the message names the backend and
    what is missing."""


def checked_attributes(network: object, backend: str) -> BackendAttributes:
    """The attributes of a network loaded by ``backend``, after checking that it keeps the
    protocol: the :data:`NETWORK_MEMBERS` and an ``attributes()`` that returns a complete
    :class:`BackendAttributes`. Raises BackendError naming the backend and the missing field."""
    kind = type(network).__name__
    for member in NETWORK_MEMBERS:
        if not hasattr(network, member):
            raise BackendError(
                f"backend {backend!r}: its network ({kind}) lacks {member!r}, "
                f"which the protocol requires ({', '.join(NETWORK_MEMBERS)})"
            )
    try:
        attributes = cast(Network, network).attributes()  # its members are checked above
    except TypeError as exc:  # e.g. BackendAttributes(...) without a required field
        raise BackendError(f"backend {backend!r}: {kind}.attributes() failed: {exc}") from exc
    if not isinstance(attributes, BackendAttributes):
        raise BackendError(
            f"backend {backend!r}: {kind}.attributes() returned "
            f"{type(attributes).__name__}, expected BackendAttributes"
        )
    if attributes.packed_input and not hasattr(network, "evaluate_packed"):
        raise BackendError(
            f"backend {backend!r}: its network ({kind}) declares packed_input but lacks "
            "'evaluate_packed'"
        )
    if attributes.policy_gather:
        methods = ("evaluate", "evaluate_packed") if attributes.packed_input else ("evaluate",)
        for method in methods:
            if not _takes_legal(getattr(network, method)):
                raise BackendError(
                    f"backend {backend!r}: its network ({kind}) declares policy_gather but its "
                    f"{method!r} takes no 'legal'"
                )
    return attributes


__all__ = [
    "GATHER_WIDTHS",
    "INPUT_PLANES",
    "POLICY_MOVES",
    "POLICY_SIZE",
    "BackendAttributes",
    "BackendOption",
    "BackendError",
    "Network",
    "NetworkLoader",
    "NetworkOutput",
    "OptionError",
    "PackedNetwork",
    "backend_names",
    "checked_attributes",
    "gathered",
    "load_network",
    "prepare_backend",
    "read_options",
    "register_backend",
]

NetworkLoader = Callable[[str, str], Network]
"""loader(weights_path, backend_options) -> Network; ``backend_options`` is lc0's
``--backend-opts`` string, which the backend reads against its table with :func:`read_options`."""

_BACKENDS: dict[str, NetworkLoader] = {}
_PREPARERS: dict[str, Callable[[], None]] = {}


def register_backend(
    name: str, loader: NetworkLoader, prepare: Callable[[], None] | None = None
) -> None:
    """Make a backend available under ``name`` (e.g. "xla"). ``prepare``, if given, imports
    what every load of this backend needs (a library such as jax) without loading a network:
    the entry point calls it before starting work that would compete with it for the GIL."""
    _BACKENDS[name] = loader
    if prepare is not None:
        _PREPARERS[name] = prepare


def prepare_backend(name: str) -> None:
    """Import what loading a network with backend ``name`` needs (nothing for an unknown name
    or a backend without a ``prepare``: the load reports an unknown backend)."""
    prepare = _PREPARERS.get(name)
    if prepare is not None:
        prepare()


def backend_names() -> list[str]:
    return sorted(_BACKENDS)


def load_network(path: str, options: str = "", backend: str = "xla") -> Network:
    """Load ``path`` with the named backend; raises ValueError naming the registered backends,
    and BackendError when the backend's network does not keep the protocol."""
    if backend not in _BACKENDS:
        raise ValueError(f"unknown backend {backend!r}: expected one of {backend_names()}")
    network = _BACKENDS[backend](path, options)
    checked_attributes(network, backend)
    return network
