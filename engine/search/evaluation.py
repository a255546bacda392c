"""A batch's evaluation on the search worker that gathered it (lc0's backend computation and
the policy's softmax): the network call on the planes the gather encoded, and each position's
moves sorted by prior. :class:`Evaluator` owns what the calls share: the
count of batches on the network and the backend's limit on calls at once.
"""

from __future__ import annotations

import functools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple, cast

import numpy as np

from engine.backend import (
    ANY_CALLS,
    GATHER_WIDTHS,
    BackendAttributes,
    Network,
    NetworkOutput,
    PackedNetwork,
)
from engine.encoding.rows import expand_batch
from engine.search.contempt import WdlRescale
from engine.search.core import gather as cgather
from engine.search.core import minibatch as cminibatch
from engine.search.core.calls import direct
from engine.search.timeline import Timeline

expand_planes = direct(expand_batch)
sort_policies = direct(cminibatch.sort)
finite_values = direct(cminibatch.finite_values)
most_moves = direct(cminibatch.most_moves)
"""The compiled calls of every evaluation, without numba's per-call dispatch."""


class Job(NamedTuple):
    """One batch's evaluation: its first ``n`` positions, its number in the search (the
    timeline's), and lc0's PolicyTemperature for its softmax. A named tuple (frozen; one is made
    every minibatch, three times faster than a frozen dataclass)."""

    batch: cgather.Batch
    n: int
    seq: int
    temperature: float


class Evaluator:
    """The network as the search workers call it, one a :class:`engine.search.search.Search`,
    outliving its ``go``s. Each worker evaluates its own batch on its own thread
    (:meth:`evaluate`: the compiled encoding and sort, and the backend's call, all without the
    GIL). A backend that takes fewer than :data:`ANY_CALLS` calls at once
    (``attributes.concurrency``) gets them from that many *device threads*, in the order they
    came: the thread that ends one call starts the next one queued, with no thread to wake
    between them (on a virtual machine a sleeping thread took about a millisecond to wake, a
    third of a simulated accelerator's call); otherwise each worker calls it itself.

    Who writes what (everything else is read-only after ``__init__``):

    ============== ================================= =================================
    state          written by                        read by
    ============== ================================= =================================
    ``on_device``  each worker (+1 before its call,  the compiled gather (partial
                   -1 after), under ``_lock``        minibatches: lc0's idling rule)
    ``_device``    each worker (submits its call;    –
                   the device threads run them in
                   the order they came)
    ``_device``    (the pool itself) :meth:`renew`,  –
                   a run whose call hung
    ``timeline``   its caller, between searches      the workers
    ``rescale``    Search.run, between searches      the workers
    ============== ================================= =================================
    """

    def __init__(self, network: Network, attributes: BackendAttributes) -> None:
        self.network, self.attributes = network, attributes
        self.on_device = np.zeros(1, np.int64)
        """Batches handed to the network and not yet answered (the compiled gather's int64
        [1]); changed under ``_lock`` only."""
        self.timeline: Timeline | None = None
        """Set by a caller (bin/perf/bench --trace) to record each batch's device time."""
        self.rescale: WdlRescale | None = None
        """The WDL rescaling (contempt) of the search's values, set before each run when it
        changes them: each batch's q and d are rescaled as they come from the network."""
        self._lock = threading.Lock()
        self._device = self._new_device()

    def evaluate(self, job: Job) -> Heads:
        """The network's values (q, d, m) for the job's positions, on the calling thread: their
        packed planes (the gather's) as they are for a network that takes them, else expanded
        into the batch's float planes; the network call, given the legal moves' policy indices
        where the network gathers their logits itself; then each position's moves sorted by
        prior into the batch (lc0's softmax)."""
        batch, n, attributes = job.batch, job.n, self.attributes
        packed = attributes.packed_input
        legal = None
        if attributes.policy_gather:
            width = gather_width(most_moves(batch, n))
            legal = batch.indices[:n, :width]
        if not packed:
            expand_planes(batch.masks, batch.values, batch.planes, 0, n)
        with self._lock:
            self.on_device[0] += 1
        try:
            if self._device is None:
                out = self._call(packed, batch, n, legal, job.seq)
            else:
                call = functools.partial(self._call, packed, batch, n, legal, job.seq)
                out = self._device.submit(call).result()
        finally:
            with self._lock:
                self.on_device[0] -= 1
        # Once a batch, read-only contiguous float32 whatever the backend returns: the types the
        # compiled calls were made for (engine/search/core/calls.py).
        policy, q = network_heads(out.policy), network_heads(out.q)
        check_values(q, policy, n)
        d, m = network_heads(out.d), network_heads(out.m)
        rescale = self.rescale
        if rescale is not None:
            q, d = rescale.apply(q, d, batch.req["depth"][:n])
            q, d = network_heads(q), network_heads(d)
        # A gathered policy holds each position's legal moves' logits in the order of its moves.
        indices = batch.indices if legal is None else identity_indices(batch.indices.shape)
        sort_policies(batch, policy, indices, 0, n, float(job.temperature))
        return q, d, m

    def close(self) -> None:
        """The device threads leave once the calls queued are done."""
        if self._device is not None:
            self._device.shutdown(wait=False)

    def renew(self) -> None:
        """Leave a hung call's device thread behind: the next calls go to new ones."""
        self.close()
        self._device = self._new_device()

    def _new_device(self) -> ThreadPoolExecutor | None:
        if self.attributes.concurrency >= ANY_CALLS:
            return None
        return ThreadPoolExecutor(
            max(1, self.attributes.concurrency), thread_name_prefix="nn-device"
        )

    def _call(
        self, packed: bool, batch: cgather.Batch, n: int, legal: np.ndarray | None, seq: int
    ) -> NetworkOutput:
        timeline = self.timeline
        start = Timeline.now() if timeline is not None else 0.0
        # ``legal`` only to a network whose attributes declare policy_gather (engine.backend).
        if packed:  # checked_attributes: a network that declares packed_input has the method
            network = cast(PackedNetwork, self.network)
            masks, values = batch.masks[:n], batch.values[:n]
            if legal is None:
                out = network.evaluate_packed(masks, values)
            else:
                out = network.evaluate_packed(masks, values, legal=legal)
        elif legal is None:
            out = self.network.evaluate(batch.planes[:n])
        else:
            out = self.network.evaluate(batch.planes[:n], legal=legal)
        if timeline is not None:
            timeline.add(seq, "device", start, Timeline.now())
        return out


Heads = tuple[np.ndarray, np.ndarray, np.ndarray]
"""A batch's q, d and m as the compiled calls take them (:func:`network_heads`)."""


def network_heads(values: np.ndarray) -> np.ndarray:
    """A head's values as the compiled backup takes them, made once a batch: contiguous float32,
    read-only, whatever the backend returns (XLA's CPU buffers are read-only, a numpy backend's
    are not; a view when they already are). The compiled calls skip numba's dispatch, so their
    argument types must never change (engine/search/core/calls.py), and numba types a read-only
    array apart from a writable one."""
    out = np.ascontiguousarray(values, np.float32).view()
    out.flags.writeable = False
    return out


def gather_width(moves: int) -> int:
    """The width of :data:`engine.backend.GATHER_WIDTHS` that holds ``moves`` legal moves (a
    position has at most 218)."""
    return _WIDTH_OF[moves]


_WIDTH_OF = tuple(next(w for w in GATHER_WIDTHS if w >= m) for m in range(GATHER_WIDTHS[-1] + 1))
"""gather_width's answer for each number of moves, read once a batch."""


@functools.cache
def identity_indices(shape: tuple[int, int]) -> np.ndarray:
    """Policy indices [rows, moves] whose every row is 0, 1, ...: a gathered policy's, shared by
    every batch of that shape. Writable, as the batch's own indices, so that the compiled sort
    (called without numba's dispatch) sees the type it was compiled for; nothing writes it."""
    return np.ascontiguousarray(np.broadcast_to(np.arange(shape[1], dtype=np.int32), shape))


def check_values(q: np.ndarray, policy: np.ndarray, n: int) -> None:
    """Refuse a batch whose value (float32 ``q``), or its first position's policy, is not a
    number: a search on NaN plays nonsense without a word (a network with broken weights, found
    by ``bin/check/soak networks``). One policy row: broken weights spoil every row, and all of
    them would cost a GPU's batch a few percent."""
    if finite_values(q, n, policy):
        return
    bad, what = n - int(np.isfinite(q[:n]).sum()), "value"
    if not bad:
        bad, what = 1, "policy"
    raise ValueError(
        f"the network's {what} is not a number (NaN or infinite) for {bad} of {n} "
        "positions: its weights are broken, or its data type overflows (try the backend "
        "option data_type=f32)"
    )
