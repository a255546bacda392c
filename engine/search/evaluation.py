"""A batch's evaluation on a host thread beside the search's (lc0's backend computation and
the policy's softmax): its planes encoded from the histories the gather kept, the network
call queued on the device's threads in the batches' order, and each position's moves sorted by
prior. :class:`Evaluator` owns every thread, queue and signal of it; the encoding and the sort
go in :class:`Chunks` that the waiting search thread shares.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from engine.backend import GATHER_WIDTHS, BackendAttributes, Network, NetworkOutput
from engine.encoding.rows import expand_batch
from engine.search.core import backup as cbackup
from engine.search.core import gather as cgather
from engine.search.core.calls import direct
from engine.search.result import WAIT_SLICE_S
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

MAX_IN_FLIGHT = 128
"""Batches one evaluator prepares at once at most (the Threads option's maximum)."""


@dataclass(frozen=True)
class Job:
    """One batch's evaluation: its first ``n`` positions, its number in the search (the
    timeline's and the shared chunks' key), the input format and history fill to encode it
    with (the gather's Walk.info), and lc0's PolicyTemperature for its softmax."""

    batch: cgather.Batch
    n: int
    seq: int
    fmt: int
    fill: int
    temperature: float

    @staticmethod
    def of(batch: cgather.Batch, n: int, seq: int, info: np.ndarray, temperature: float) -> Job:
        return Job(batch, n, seq, int(info[cgather.FORMAT]), int(info[cgather.FILL]), temperature)


class Evaluator:
    """The evaluation's threads, their queue to the device, their order and the signals the
    search reads: one a :class:`engine.search.search.Search`, outliving its ``go``\\ s.

    Threads: the *batch workers* (one a batch in flight: each encodes its batch's planes, hands
    the network call to the device's queue and sorts the policies), the *device workers*
    (``attributes.concurrency``: the calls the backend runs at once; a call waits until the
    previous batch's is queued, so the calls run in the order the batches went), and the
    *search thread*, which submits, takes chunks while it waits, and backs up.

    Who writes what (everything else is read-only after ``__init__``):

    ============== ================================= =================================
    state          written by                        read by
    ============== ================================= =================================
    ``on_device``  search thread (+1 at submit),     the compiled gather (its partial
                   batch worker (-1 when done),      minibatches)
                   both under ``_lock``
    ``wake``       set: batch worker (done, chunks   search thread (:meth:`wait`)
                   offered), :meth:`interrupt`;
                   cleared: search thread
    ``_shared``    batch worker (offers and          search thread (:meth:`wait`
                   withdraws its :class:`Chunks`)    takes chunks)
    ``_last``      search thread (:meth:`submit`)    the next batch's worker
    the pools      search thread (:meth:`renew`,     –
                   :meth:`close`)
    ``timeline``   its caller, between searches      batch and device workers
    ============== ================================= =================================
    """

    def __init__(self, network: Network, attributes: BackendAttributes) -> None:
        self.network, self.attributes = network, attributes
        self.on_device = np.zeros(1, np.int64)
        """Batches handed to the network and not yet answered (the compiled gather's int64
        [1]); changed under ``_lock`` only."""
        self.wake = threading.Event()
        """Set when an evaluation finishes, offers chunks, or a stop arrives."""
        self.timeline: Timeline | None = None
        """Set by a caller (bin/perf/bench --trace) to record each batch's device time."""
        self._lock = threading.Lock()
        self._shared: dict[int, Chunks] = {}
        self._last: threading.Event | None = None
        self._workers, self._device = self._new_pools()

    # ------------------------------------------------------------------------------ the search's
    def submit(self, job: Job) -> Future:
        """Evaluate ``job`` on a batch worker; the future wakes :meth:`wait` when done."""
        with self._lock:
            self.on_device[0] += 1
        queued = threading.Event()
        after, self._last = self._last, queued
        future = self._workers.submit(self._evaluate, job, self._device, (after, queued))
        future.add_done_callback(self._answered)
        return future

    def evaluate_here(self, job: Job) -> NetworkOutput:
        """Evaluate ``job`` on the calling thread (the root, before a search's batches)."""
        return self._evaluate(job, None, None)

    def wait(self, future: Future, seq: int) -> bool:
        """Take the chunks batches offer (batch ``seq``'s first) until ``future`` is done, or
        wait for a wake-up; True when it is done, False after one slice of waiting (the caller
        checks its stop and deadlines between slices)."""
        while not future.done():
            shared = [(k, w) for k, w in list(self._shared.items()) if w.open]
            if not shared:
                self.wake.wait(WAIT_SLICE_S)
                self.wake.clear()
                return future.done()
            for _, work in sorted(shared, key=lambda kw: kw[0] != seq):
                work.run()
        return True

    def interrupt(self) -> None:
        """Wake the search thread's :meth:`wait` (a stop)."""
        self.wake.set()

    def renew(self) -> None:
        """Leave a hung call's threads behind: the next batches go to new ones."""
        self.close()
        self._workers, self._device = self._new_pools()

    def close(self) -> None:
        self._workers.shutdown(wait=False, cancel_futures=True)
        self._device.shutdown(wait=False, cancel_futures=True)

    # ------------------------------------------------------------------------------ the workers'
    def _new_pools(self) -> tuple[ThreadPoolExecutor, ThreadPoolExecutor]:
        # The batch pool starts a thread only when none is idle: as many as batches in flight.
        self._last = None
        workers = ThreadPoolExecutor(MAX_IN_FLIGHT, thread_name_prefix="nn-batch")
        device = ThreadPoolExecutor(self.attributes.concurrency, thread_name_prefix="nn-eval")
        return workers, device

    def _answered(self, _future: Future) -> None:
        with self._lock:
            self.on_device[0] -= 1
        self.wake.set()

    def _offer(self, seq: int, chunks: Chunks) -> None:
        """``chunks`` done on this batch worker, offered to the search thread meanwhile."""
        self._shared[seq] = chunks
        self.wake.set()
        try:
            chunks.finish()
        finally:
            self._shared.pop(seq, None)

    def _evaluate(
        self,
        job: Job,
        device: ThreadPoolExecutor | None,
        order: tuple[threading.Event | None, threading.Event] | None,
    ) -> NetworkOutput:
        """The network's answer for the job's positions: their packed planes encoded from the
        histories the gather kept, as they are for a network that takes them, else expanded
        into the batch's float planes; the network call on ``device`` (None: here), given the
        legal moves' policy indices where the network gathers their logits itself; then each
        position's moves sorted by prior into the batch (lc0's softmax). ``order``: (set when
        the previous batch's call is queued, or None; to set once this one's is)."""
        after, queued = order if order is not None else (None, None)
        batch, n, attributes = job.batch, job.n, self.attributes
        packed = attributes.packed_input
        legal = None
        if attributes.policy_gather:
            width = gather_width(int(batch.req["count"][:n].max(initial=0)))
            legal = batch.indices[:n, :width]
        try:

            def encode(start: int, end: int) -> None:
                encode_planes(batch.req, batch.window, job.fmt, job.fill, batch.masks,
                              batch.values, start, end)  # fmt: skip
                if not packed:
                    expand_planes(batch.masks, batch.values, batch.planes, start, end)

            self._offer(job.seq, Chunks(n, encode))
            call = functools.partial(self._call, packed, batch, n, legal, job.seq)
            if device is None:
                out = call()
            else:
                if after is not None:
                    after.wait(ORDER_WAIT_S)
                on_device = device.submit(call)
                if queued is not None:
                    queued.set()
                out = on_device.result()
        finally:
            if queued is not None:
                queued.set()  # a failed batch does not hold up the next
        check_values(out, n)
        policy = network_heads(out.policy)
        # A gathered policy holds each position's legal moves' logits in the order of its moves.
        indices = batch.indices if legal is None else identity_indices(batch.indices.shape)

        def sort(start: int, end: int) -> None:
            sort_policies(batch.req, batch.moves, indices, policy, start, end,
                          float(job.temperature), batch.sorted_moves, batch.priors)  # fmt: skip

        self._offer(job.seq, Chunks(n, sort))
        return out

    def _call(
        self, packed: bool, batch: cgather.Batch, n: int, legal: np.ndarray | None, seq: int
    ) -> NetworkOutput:
        timeline = self.timeline
        start = Timeline.now() if timeline is not None else 0.0
        gather = {} if legal is None else {"legal": legal}  # only a network that declares it
        if packed:
            out = self.network.evaluate_packed(batch.masks[:n], batch.values[:n], **gather)  # type: ignore[attr-defined]  # declared by packed_input
        else:
            out = self.network.evaluate(batch.planes[:n], **gather)
        if timeline is not None:
            timeline.add(seq, "device", start, Timeline.now())
        return out


def network_heads(values: np.ndarray) -> np.ndarray:
    """A head's values as the compiled backup takes them: contiguous float32, read-only (a view
    when they already are; numba types a read-only array apart from a writable one)."""
    out = np.ascontiguousarray(values, np.float32).view()
    out.flags.writeable = False
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
