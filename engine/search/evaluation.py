"""A batch's evaluation on a host thread beside the search's (lc0's backend computation and
the policy's softmax): its planes encoded from the histories the gather kept, the network
call queued on the device's executor in the batches' order, and each position's moves sorted by
prior. The encoding and the sort go in :class:`Chunks` that the waiting search thread shares.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import Executor

import numpy as np

from engine.backend import GATHER_WIDTHS, BackendAttributes, Network, NetworkOutput
from engine.encoding.rows import expand_batch
from engine.search.core import backup as cbackup
from engine.search.core import gather as cgather
from engine.search.core.calls import direct
from engine.search.timeline import Timeline

expand_planes = direct(expand_batch)
encode_planes = direct(cgather.encode_requests)
sort_policies = direct(cbackup.sort_policies)
"""The compiled calls of every evaluation, without numba's per-call dispatch."""

CHUNK = 32
"""Rows of a batch encoded or sorted at a time: the batch's worker and the waiting search
thread take chunks in turn (:class:`Chunks`)."""

ORDER_WAIT_S = 30.0
"""How long a batch's call waits for the previous batch's to be queued: past it (a previous
batch whose worker never ran), it goes first rather than never."""


def network_heads(values: np.ndarray) -> np.ndarray:
    """A head's values as the compiled backup takes them: contiguous float32, read-only (a view
    when they already are; numba types a read-only array apart from a writable one)."""
    out = np.ascontiguousarray(values, np.float32).view()
    out.flags.writeable = False
    return out


def run_network(
    network: Network,
    attributes: BackendAttributes,
    batch: cgather.Batch,
    info: np.ndarray,
    n: int,
    temperature: float,
    device: Executor | None = None,
    timeline: Timeline | None = None,
    seq: int = 0,
    order: tuple[threading.Event | None, threading.Event] | None = None,
    share: Callable[[Chunks | None], None] | None = None,
) -> NetworkOutput:
    """The network's answer for the batch's first ``n`` positions, on a host thread beside the
    search's: their packed planes encoded from the histories the gather kept (``info``: the
    gather's Walk.info, for the input format), as they are for a network that takes them, else
    expanded into the batch's float planes; the network call on ``device`` (the device's queue,
    an executor; None: here), given the legal moves' policy indices where the network gathers
    their logits itself (``attributes``); then each position's moves sorted by prior into the
    batch (lc0's softmax at PolicyTemperature ``temperature``). ``timeline``: the network call's start and
    end. ``order``: (set when the previous batch's call is queued, or None; to set once this
    one's is): the planes of several batches are prepared at once, their calls queue in the
    order the batches went. ``share``: told of the batch's encoding, then of its sort, as
    :class:`Chunks` the search thread may take rows of while it waits, and of None after each."""
    after, queued = order if order is not None else (None, None)
    packed = attributes.packed_input
    legal = None
    if attributes.policy_gather:
        legal = batch.indices[:n, : gather_width(int(batch.req["count"][:n].max(initial=0)))]
    try:
        fmt, fill = int(info[cgather.FORMAT]), int(info[cgather.FILL])

        def encode(start: int, end: int) -> None:
            encode_planes(batch.req, batch.window, fmt, fill, batch.masks, batch.values, start,
                          end)  # fmt: skip
            if not packed:
                expand_planes(batch.masks, batch.values, batch.planes, start, end)

        _shared(Chunks(n, encode), share)
        if device is None:
            out = _call_network(network, packed, batch, n, legal, timeline, seq)
        else:
            if after is not None:
                after.wait(ORDER_WAIT_S)
            call = device.submit(_call_network, network, packed, batch, n, legal, timeline, seq)
            if queued is not None:
                queued.set()
            out = call.result()
    finally:
        if queued is not None:
            queued.set()  # a failed batch does not hold up the next
    check_values(out, n)
    policy = network_heads(out.policy)
    # A gathered policy holds each position's legal moves' logits in the order of its moves.
    indices = batch.indices if legal is None else identity_indices(batch.indices.shape)

    def sort(start: int, end: int) -> None:
        sort_policies(batch.req, batch.moves, indices, policy, start, end,
                      float(temperature), batch.sorted_moves, batch.priors)  # fmt: skip

    _shared(Chunks(n, sort), share)
    return out


def gather_width(moves: int) -> int:
    """The width of :data:`engine.backend.GATHER_WIDTHS` that holds ``moves`` legal moves."""
    return next(w for w in GATHER_WIDTHS if w >= moves)


@functools.cache
def identity_indices(shape: tuple[int, int]) -> np.ndarray:
    """Policy indices [rows, moves] whose every row is 0, 1, ...: a gathered policy's, shared by
    every batch of that shape. Writable, as the batch's own indices, so that the compiled sort
    (called without numba's dispatch) sees the type it was compiled for; nothing writes it."""
    return np.ascontiguousarray(np.broadcast_to(np.arange(shape[1], dtype=np.int32), shape))


def check_values(out: NetworkOutput, n: int) -> None:
    """Refuse a batch whose value, or its first position's policy, is not a number: a search on
    NaN plays nonsense without a word (a network with broken weights, found by ``bin/check/soak
    networks``). One policy row: broken weights spoil every row, and all of them would cost a
    GPU's batch a few percent."""
    finite = np.isfinite(out.q[:n])
    bad = n - int(finite.sum())
    what = "value"
    if not bad and n and not np.isfinite(out.policy[0]).all():
        bad, what = 1, "policy"
    if bad:
        raise ValueError(
            f"the network's {what} is not a number (NaN or infinite) for {bad} of {n} "
            "positions: its weights are broken, or its data type overflows (try the backend "
            "option data_type=f32)"
        )


def _shared(chunks: Chunks, share: Callable[[Chunks | None], None] | None) -> None:
    """``chunks`` done here, offered to the search thread meanwhile through ``share``."""
    if share is not None:
        share(chunks)
    try:
        chunks.finish()
    finally:
        if share is not None:
            share(None)


class Chunks:
    """Rows ``0 .. n - 1`` of a batch's work (``work(start, end)``, a compiled call without the
    GIL) in chunks of :data:`CHUNK` that whoever runs :meth:`run` takes in turn: the batch's
    worker, and the search thread while it would otherwise wait (the planes' encoding and the
    policies' sort are on the path from a gather to the next device call and from the device's
    answer to the backup: with two batches in flight that path decides when the device is fed).
    """

    def __init__(self, n: int, work: Callable[[int, int], None]) -> None:
        self.n, self.work = n, work
        self._next = self._done = 0
        self._lock = threading.Lock()
        self._finished = threading.Event()
        if n <= 0:
            self._finished.set()

    def run(self) -> None:
        """Do chunks until none is left to take (others may still be doing theirs)."""
        while True:
            with self._lock:
                start = self._next
                end = self._next = min(self.n, start + CHUNK)
            if start >= self.n:
                return
            try:
                self.work(start, end)
            finally:
                with self._lock:
                    self._done += end - start
                    if self._done >= self.n:
                        self._finished.set()

    @property
    def open(self) -> bool:
        """Whether chunks are left to take."""
        return self._next < self.n

    def finish(self) -> None:
        """Do chunks, then wait for those others took."""
        self.run()
        self._finished.wait()


def _call_network(
    network: Network, packed: bool, batch: cgather.Batch, n: int, legal: np.ndarray | None,
    timeline: Timeline | None, seq: int,
) -> NetworkOutput:  # fmt: skip
    start = Timeline.now() if timeline is not None else 0.0
    gather = {} if legal is None else {"legal": legal}  # only a network that declares it takes it
    if packed:
        out = network.evaluate_packed(batch.masks[:n], batch.values[:n], **gather)  # type: ignore[attr-defined]  # declared by packed_input
    else:
        out = network.evaluate(batch.planes[:n], **gather)
    if timeline is not None:
        timeline.add(seq, "device", start, Timeline.now())
    return out
