"""lc0's search threads for one run (``Threads`` of them, lc0's ``SearchWorker``s) over the one
tree, and the nodes lock they share.

Each thread repeats one iteration (lc0's ``ExecuteOneIteration``, :meth:`SearchThreads._iterate`):
stoppers (nodes lock) → the report they queued, made and sent (unlocked: engine/search/outbox.py) →
gather (compiled: select, new leaves, planes; *without* the lock, beside the other threads' gathers
and backups) → Syzygy probes of the candidates it flagged (lock, no gather or backup running) →
evaluate (its own network call, unlocked: the compiled encoding and sort and the backend's call
release the GIL) → expand and back up (compiled, without the lock, beside the others), then every
batch's collisions out of flight (lock; a gather leaves its own in flight until then, lc0's shared
collisions: :class:`SharedCollisions`). lc0 picks and backs up under one nodes mutex; here the
compiled phases share the tree through atomics instead (two threads selecting under one lock topped
out at x1.2 of one thread on two cores, the lock held 83 % of the time): a visit in flight is an
atomic add to ``nif``, a leaf is claimed (PENDING) by one gather, a child or a node's block of kids
is made by the thread that claims its slot, an expansion publishes its edges before its edge count,
and the values along a path (n, wl, d, m, the counters) change under one spin lock (core/tree.py's
``lock_values``, core/gather.py's ``_claim``, core/backup.py). What needs the tree alone (its
growth, which replaces the arrays; a probe's backups; the run's close) waits for the compiled phases
to end (:meth:`SearchThreads._exclusive`), and none starts meanwhile. A run's end does not wait
for the batches still on the network (nor does a stop): as lc0's threads finish their iteration
after the bestmove, they are backed up once the run settles (:class:`LateBatches`), before the next
step on the tree.

Who writes what (:class:`SearchThreads`; everything under ``nodes`` but ``_done``, the NN cache
and the compiled phases' tree updates):

=================== ==================================== =====================================
state               written by                           read by
=================== ==================================== =====================================
the tree's visits,  each thread's compiled gather and    the threads, the watching thread (the
values and shape    backup, without the lock (atomics,   stoppers' deadline, the info lines)
                    claims, the values' lock); a late
                    batch's thread once the run settles
the tree's arrays   a thread under the lock with no      every phase (which holds them whole)
(growth)            phase running (``_exclusive``)
the run's ``Tally`` each thread (under the lock); its    the stoppers, the info lines
                    counters: the compiled backups
``_in_tree``        each thread (+1 before a compiled    ``_exclusive`` (waits for 0), a
                    phase, -1 after; under the lock)     thread with nothing to gather
``_exclusives``     ``_exclusive`` (while it waits)      each thread (no new phase starts)
``_changes``        each thread (after a backup, its     a thread with nothing to gather (it
                    own or a gather's out-of-order ones) looks again if the tree changed)
``_collided``       each thread (its gather's end adds   each thread (a backup takes every
                    its batch; a dropped batch leaves)   batch's collisions out of flight)
``_evaluating``     each thread (its batch on the        the watching thread (a hung call),
                    network, since when)                 the close (the batches kept late)
``late``            the close (keeps), a late thread     the late threads (wait for the
                    (backs up), ``settle`` (drops hung)  settling), ``settle`` (waits)
``_over``,          :meth:`end` (any thread: a limit,    the threads (at each iteration; back
``_closed``         a failure; the watching thread)      from the network)
``failure``         the thread whose call failed, the    the run (its report)
                    watching thread (a hung call)
``_done``           :meth:`end`                          the watching thread (wakes)
``outbox`` (queue)  the stoppers and ``watch`` (queue a      whichever thread flushes it next
                    report; it is made when sent)        (without the lock, one at a time)
the NN cache        each thread's evaluation, unlocked   the gathers (a seqlock: core/cache.py)
(not ``nodes``)     (one at a time: ``NNCache.lock``)
=================== ==================================== =====================================
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from engine.search.core import gather as cgather
from engine.search.outbox import Outbox
from engine.search.resources import Resources
from engine.search.result import WAIT_SLICE_S
from engine.search.timeline import Timeline
from engine.search.worker import SearchWorker, run_backup, run_gather

NETWORK_STALL_S = 60.0
"""A network call not back after this long has hung: the search stops and says so."""

NPS_LIMIT_WAIT_S = 0.001
"""lc0's wait under NodesPerSecondLimit: a millisecond at a time."""

Stoppers = Callable[[], tuple[bool, float, int]]
"""lc0's stoppers over the root, called under the nodes lock: (a limit is reached, the playouts
expected to remain, the root's best edge)."""


class SearchThreads:
    """The search threads of one run: ``worker``'s phases (its batch buffers: one a thread),
    the ``stoppers`` before each gather; a run ``until_stop`` goes on idle when a limit is
    reached or nothing is left to gather. ``too_fast`` (NodesPerSecondLimit's test, None:
    no limit): after backing up its minibatch a thread waits a millisecond at a time while
    it holds and the run goes on (lc0's ExecuteOneIteration wasting time to limit nps)."""

    def __init__(
        self,
        res: Resources,
        worker: SearchWorker,
        stoppers: Stoppers,
        until_stop: bool,
        too_fast: Callable[[], bool] | None = None,
        outbox: Outbox | None = None,
    ) -> None:
        self.res, self.worker, self.stoppers, self.until_stop = res, worker, stoppers, until_stop
        self.too_fast, self.outbox = too_fast, Outbox() if outbox is None else outbox
        self.nodes = NodesLock()
        """lc0's nodes mutex (the table above); waiting on it waits for a backup."""
        self.failure: BaseException | None = None
        """What ended the run early: a network call that failed or hung."""
        self._evaluating: dict[threading.Thread, tuple[cgather.Batch, float]] = {}
        self._collided = SharedCollisions(worker.release_collisions)
        self.late = LateBatches(self.nodes, worker, res)
        """The batches on the network when the run ended, until it settles."""
        self._over = self._closed = False
        self._in_tree = 0
        """Threads in a compiled gather or backup now, outside the lock (side by side)."""
        self._exclusives = 0
        """Threads waiting for those to end (the tree's growth, a probe, the run's close)."""
        self._changes = 0
        """Backups done (a batch's, a gather's out-of-order ones): leaves claimed before may be
        free again, so a gather that collided with them looks again rather than ending."""
        self._done = threading.Event()
        self._grown = threading.Event()
        """The tree has outgrown :meth:`_small_tree`, the run is over, or one thread runs (none
        waits); an event: a wake-up at every backup cost 500 nodes 7.4 ms against 3.6."""
        if worker.params.threads <= 1:
            self._grown.set()

    def run(self, watch: Callable[[], bool], slice_s: float) -> None:
        """Start the threads, then call ``watch`` (nodes lock held) every ``slice_s`` until the
        run is over, ``watch`` returns False or a network call hangs; then close the run."""
        # Not daemons: a thread left on the network when the run ended finishes its call, finds
        # the run closed and leaves; the interpreter's exit waits for that rather than killing
        # it inside the backend's native code (which aborts the process).
        threads = [
            threading.Thread(target=self._work, args=(batch, i == 0), name=f"search-{i}")
            for i, batch in enumerate(self.worker.prepare())
        ]
        for thread in threads:
            thread.start()
        try:
            while not self._done.wait(slice_s):
                with self.nodes:
                    if self._stalled() or not watch():
                        break
                self.outbox.flush(wait=False)
        finally:
            on_network = self._close()
            for thread in threads:
                if thread not in on_network:
                    thread.join()

    def end(self) -> None:
        """The run is over (nodes lock held): the threads leave at their next iteration."""
        self._over = True
        self._done.set()
        self._grown.set()
        self.nodes.wake()

    def _work(self, batch: cgather.Batch, first: bool) -> None:
        """One search thread: lc0's ``SearchWorker::RunBlocking``. All but the ``first`` wait
        while the tree is small (:meth:`_small_tree`)."""
        try:
            if not first:
                with self.nodes:
                    small = self._small_tree()
                while small and not self._grown.wait(WAIT_SLICE_S):
                    small = not self._over
            while self._iterate(batch):
                if self.too_fast is not None:  # after every iteration, as lc0's
                    self._throttle(self.too_fast)
        except BaseException as exc:  # a bug: the run ends and says so, the tree stays whole
            with self.nodes:
                if not self._closed:
                    self.failure = self.failure or exc
                    self.end()

    def _iterate(self, batch: cgather.Batch) -> bool:
        """lc0's ``ExecuteOneIteration`` (the module docstring); False when the run is over."""
        thread = threading.current_thread()
        with self.nodes:
            go_on, n, seq = self._start(batch, thread)
        if not n:
            return go_on
        try:
            heads = self.worker.evaluate(batch, n, seq)
        except Exception as exc:  # the network failed: keep the tree whole and stop
            with self.nodes:
                self.late.drop(thread)  # when left on the network at the run's end
                if not self._closed:
                    del self._evaluating[thread]
                    self.worker.abandon(batch)
                    self._collided.release(batch)
                    self.failure = self.failure or exc
                    self.end()
            return False
        with self.nodes:
            while self._exclusives:  # the tree's growth, a probe or the close goes first
                self.nodes.wait(WAIT_SLICE_S)
            if not self._closed:
                self.worker.make_room(self._exclusive)  # its wait may let the close in
            if self._closed:  # the run ended meanwhile: backed up once it settles (lc0's)
                self.late.back_up(thread, batch, heads)
                return False
            timeline = self.res.timeline
            start = Timeline.now() if timeline is not None else 0.0
            call = self.worker.begin_backup(batch, heads)
            del self._evaluating[thread]
            self._in_tree_run(run_backup, call)
            self._collided.release()
            self._changes += 1
            if not self._grown.is_set() and not self._small_tree():
                self._grown.set()
            self.worker.tally.batches += 1
            if timeline is not None:
                timeline.add(seq, "backup", start, Timeline.now())
            self.nodes.wake()
        return True

    def _start(self, batch: cgather.Batch, thread: threading.Thread) -> tuple[bool, int, int]:
        """An iteration's first part (nodes lock held): the stoppers, the report they queued (sent
        with the lock let go), then the gather. Returns (the run goes on, the batch's requests,
        its number); no requests: nothing to evaluate."""
        if self._over or self.res.state.stop.is_set():
            self.end()
            return False, 0, 0
        reached, remaining, best = self.stoppers()
        if self.outbox:  # their report, made and sent before the gather adds to the tree
            self.outbox.flush(self.nodes, wait=False)
        if (reached and not self.until_stop) or self._over or self.res.state.stop.is_set():
            self.end()
            return False, 0, 0
        n = ooo = seq = 0
        changes = self._changes
        if not reached:
            n, ooo, seq = self._gather(batch, remaining, best)
        if n:
            self._evaluating[thread] = (batch, time.monotonic())
        elif not ooo:
            # Nothing to gather: the other threads' batches hold the tree's leaves, or the
            # search can go no further (then, unless it runs until stop, it is over). A
            # thread in a compiled phase, or waiting for the tree alone with its batch
            # gathered (its probes), may still add to it; one may have backed up its batch
            # and be between iterations, holding nothing, while this gather ran.
            if self._changes != changes:
                return True, 0, 0
            busy = self._evaluating or self._in_tree or self._exclusives
            if not busy and not self.until_stop:
                self.end()
                return False, 0, 0
            self.nodes.wait(WAIT_SLICE_S)
            return True, 0, 0
        return True, n, seq

    def _small_tree(self) -> bool:
        """Whether the run goes on with a small tree (:meth:`SearchWorker.small_tree`)."""
        return not (self._over or self.res.state.stop.is_set()) and self.worker.small_tree()

    def _throttle(self, too_fast: Callable[[], bool]) -> None:
        """Wait (unlocked) while the run goes on and ``too_fast`` (read under the lock) holds."""
        while True:
            with self.nodes:
                if self._over or self.res.state.stop.is_set() or not too_fast():
                    return
            time.sleep(NPS_LIMIT_WAIT_S)

    def _gather(self, batch: cgather.Batch, remaining: float, best: int) -> tuple[int, int, int]:
        """A minibatch gathered into ``batch`` (nodes lock held): (requests, out-of-order
        backups, its number)."""
        timeline = self.res.timeline
        start = Timeline.now() if timeline is not None else 0.0
        while self._exclusives:  # the tree's growth, a probe or the close waits to go first
            self.nodes.wait(WAIT_SLICE_S)
        call = self.worker.begin_gather(batch, remaining, best, self._exclusive, True)
        self._in_tree_run(run_gather, call)
        if self._closed:  # the run ended meanwhile: this batch is the thread's to drop
            self.worker.abandon(batch)
            self.worker.release_collisions(batch)  # kept by the gather, never added
            return 0, 0, 0
        n, ooo = self.worker.end_gather(batch, self._exclusive)
        self._collided.add(batch, n)
        seq = self.res.next_sequence() if n else 0
        if n and timeline is not None:
            timeline.add(seq, "gather", start, Timeline.now(), n)
        if ooo:
            self._changes += 1
            self.nodes.wake()
        return n, ooo, seq

    def _in_tree_run(self, phase: Callable[[Any], None], call: Any) -> None:
        """A compiled phase that may run beside other threads' (a gather, a backup), run with
        the nodes lock let go (held on entry and on return); counted in ``_in_tree`` meanwhile."""
        self._in_tree += 1
        self.nodes.release()
        try:
            phase(call)
        finally:
            self.nodes.acquire()
            self._in_tree -= 1
            if not self._in_tree:
                self.nodes.wake()

    def _exclusive(self) -> None:
        """Return (nodes lock held) once no compiled phase (a gather, a backup) runs: the tree
        is this thread's until it lets the lock go (a new phase starts under the lock, and a
        gather also lets a waiting ``_exclusive`` go first)."""
        self._exclusives += 1
        try:
            while self._in_tree:
                self.nodes.wait(WAIT_SLICE_S)
        finally:
            self._exclusives -= 1

    def _stalled(self) -> bool:
        """Whether a network call hangs (nodes lock held): then ``failure`` says so (the run ends
        without its thread, which touches nothing once back)."""
        hung = hung_call(self._evaluating.values())
        if hung is None:
            return False
        self.failure = hung
        self.res.evaluator.renew()  # the next calls do not queue behind the hung one
        return True

    def _close(self) -> set[threading.Thread]:
        """End the run: the threads leave; the batches still on the network stay in flight,
        backed up when the run settles (:attr:`late`); their threads are returned."""
        with self.nodes:
            self.end()
            self._closed = True
            on_network = set(self._evaluating)
            self.late.keep(self._evaluating)  # now: the wait below lets their threads back in
            self._evaluating.clear()
            self._exclusive()
            self._collided.release()
            self.res.state.changed()
        return on_network


class NodesLock(threading.Condition):
    """lc0's nodes mutex, with the condition the threads wait on: :meth:`wake` wakes them
    only when one waits (a ``notify_all`` runs three Python calls, and a batch makes three of
    them, mostly with nobody waiting). ``waiting`` changes under the lock, so a waiter is
    counted before the lock is let go in ``wait`` and a wake-up cannot miss it."""

    def __init__(self) -> None:
        super().__init__(threading.Lock())
        self.waiting = 0

    def wait(self, timeout: float | None = None) -> bool:
        self.waiting += 1
        try:
            return super().wait(timeout)
        finally:
            self.waiting -= 1

    def wake(self) -> None:
        """``notify_all`` when a thread waits (the lock held)."""
        if self.waiting:
            self.notify_all()


class SharedCollisions:
    """lc0's shared collisions (``Search::shared_collisions_``): the batches gathered whose
    collision visits stay in flight, under the nodes lock, until the next backup, whoever's
    (lc0's ``CancelSharedCollisions``), so that the other threads' gathers meanwhile see those
    paths busy (two threads: 5 % more nodes/s than taking them out at the gather's end).
    ``release_collisions``: the compiled call that takes a batch's out of flight."""

    def __init__(self, release_collisions: Callable[[cgather.Batch], None]) -> None:
        self._release = release_collisions
        self._batches: list[cgather.Batch] = []

    def add(self, batch: cgather.Batch, requests: int) -> None:
        """A gather has ended with ``batch``'s collisions in flight: kept with ``requests`` (a
        backup to come), else out of flight now."""
        if requests:
            self._batches.append(batch)
        else:
            self._release(batch)

    def release(self, batch: cgather.Batch | None = None) -> None:
        """``batch``'s collisions out of flight, or every batch's (after a backup)."""
        kept = []
        for b in self._batches:
            if batch is None or b is batch:
                self._release(b)
            else:
                kept.append(b)
        self._batches = kept


class LateBatches:
    """The batches on the network when a run ended: backed up into the tree once the run
    settles, as lc0's search threads finish their iteration after the bestmove (the next
    ``Search`` waits for them: lc0's ``Search::Wait``); none touches the tree before, so the
    run's report and move are made from the tree as it ended. A call not back in
    NETWORK_STALL_S (or a thread gone without its batch: a bug) is dropped then (its visits out
    of flight, its buffer retired: ``Resources.retire_batch``), and its thread, once back,
    touches nothing. Its state is under the run's nodes lock."""

    def __init__(self, nodes: NodesLock, worker: SearchWorker, res: Resources) -> None:
        self._nodes, self._worker, self._res = nodes, worker, res
        self._batches: dict[threading.Thread, tuple[cgather.Batch, float]] = {}
        self._threads: list[threading.Thread] = []  # to join once their batches are in
        self._settling = False

    def keep(self, on_network: dict[threading.Thread, tuple[cgather.Batch, float]]) -> None:
        """The run's close (nodes lock held): its batches on the network, with since when."""
        self._batches.update(on_network)
        self._threads.extend(on_network)

    def back_up(self, thread: threading.Thread, batch: cgather.Batch, heads: Any) -> None:
        """``thread``, back from the network with ``heads`` (nodes lock held): its batch backed
        up once the run settles, alone in the tree; nothing if it was dropped meanwhile."""
        deadline = time.monotonic() + NETWORK_STALL_S
        while thread in self._batches and not self._settling:
            if time.monotonic() > deadline:
                return  # never settled: the settling drops it (its thread gone)
            self._nodes.wait(WAIT_SLICE_S)
        if self._batches.pop(thread, None) is not None:
            self._worker.back_up_alone(batch, heads)
            self._nodes.wake()

    def drop(self, thread: threading.Thread) -> None:
        """``thread``'s call failed (nodes lock held): its batch's visits out of flight."""
        held = self._batches.pop(thread, None)
        if held is not None:
            self._worker.abandon(held[0])
            self._nodes.wake()

    def settle(self) -> None:
        """Wait until every batch is backed up and its thread gone, or dropped (its call hung:
        its thread is left behind)."""
        with self._nodes:
            self._settling = True
            self._nodes.wake()
            while self._batches:
                now = time.monotonic()
                for thread, (batch, since) in list(self._batches.items()):
                    if now - since > NETWORK_STALL_S or not thread.is_alive():
                        del self._batches[thread]
                        self._threads.remove(thread)
                        self._worker.abandon(batch)
                        self._res.retire_batch(batch, thread)
                if self._batches:
                    self._nodes.wait(WAIT_SLICE_S)
            self._res.state.changed()
            threads, self._threads = self._threads, []
        for thread in threads:  # past their backups: what they hold is freed as they leave
            thread.join()


def hung_call(evaluating: Iterable[tuple[cgather.Batch, float]]) -> TimeoutError | None:
    """The error of a network call (its batch, since when) not back in NETWORK_STALL_S."""
    now = time.monotonic()
    for _batch, since in evaluating:
        if now - since > NETWORK_STALL_S:
            return TimeoutError(f"no answer from the network in {now - since:.0f} s")
    return None
