"""A run's info and verbose lines, queued under the nodes lock, made and sent after it is let go.

lc0 builds and sends its info lines under the nodes mutex (classic/search.cc MaybeOutputInfo),
which costs it microseconds. Here making a report (the principal variations, scores and counters,
in Python: about 80 µs) and sending it (formatting the lines and writing them to the GUI's pipe,
about a third of a millisecond) would hold the lock while the other search threads wait for it:
two threads through UCI lost 5-7 % of their nodes/s to the sending, and in-process 2.6 % to the
making. So a report is queued where lc0 makes it, in its order (:meth:`Outbox.put`, or
:meth:`Outbox.later` for lines read from the tree when they are sent); the thread that queued it,
or whichever flushes first, makes and sends it once it has let the lock go (:meth:`Outbox.flush`),
one sender at a time, so reports leave in the order they were queued. A search thread that finds
another sending goes on searching: the sender empties the queue.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any


class Outbox:
    """The lines of one run in the order they were queued (under the nodes lock), each with the
    callback that sends it (the run's ``on_info`` or ``on_verbose``)."""

    def __init__(self) -> None:
        self._queue: deque[tuple[Callable[[Any], None], Any, bool]] = deque()
        self._sending = threading.Lock()
        """One sender at a time: a report taken from the queue leaves before the next."""

    def __bool__(self) -> bool:
        """Whether lines are queued."""
        return bool(self._queue)

    def put(self, send: Callable[[Any], None], lines: Any) -> None:
        """Queue ``lines`` for ``send`` (under the nodes lock, so in the run's order)."""
        self._queue.append((send, lines, False))

    def later(self, send: Callable[[Any], None], make: Callable[[], Any]) -> None:
        """Queue the lines ``make`` returns when they are sent (without the nodes lock: it reads
        the tree as it is then); nothing is sent when it returns none."""
        self._queue.append((send, make, True))

    def flush(self, unlocking: threading.Condition | None = None, wait: bool = True) -> None:
        """Make and send what is queued, in order, without the nodes lock (``unlocking``: the
        lock the caller holds, let go meanwhile). ``wait`` False: when another thread is sending,
        return at once (that thread sends these too: it empties the queue), so that a search
        thread never waits for another's writing. A callback's exception is the caller's, as a
        direct call's would be (what is left stays queued)."""
        if not self._queue:
            return
        if unlocking is not None:
            unlocking.release()
        try:
            # Again while lines are left: a thread may have queued some and found us sending.
            while self._queue and self._sending.acquire(blocking=wait):
                try:
                    while self._queue:
                        send, lines, made_now = self._queue.popleft()
                        if made_now:
                            lines = lines()
                            if not lines:
                                continue
                        send(lines)
                finally:
                    self._sending.release()
        finally:
            if unlocking is not None:
                unlocking.acquire()
