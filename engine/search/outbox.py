"""A run's info and verbose lines, made under the nodes lock and sent after it is let go.

lc0 builds and sends its info lines under the nodes mutex (classic/search.cc MaybeOutputInfo),
which costs it microseconds; here sending means formatting the lines in Python and writing them
to the GUI's pipe, about a third of a millisecond a report, while the other search threads wait
for the lock (two threads through UCI lost 5-7 % of their nodes/s to it). The lines are made
where lc0 makes them, in its order, and queued; the thread that made them sends them once it
has let the lock go (:meth:`Outbox.flush`), one sender at a time, so they leave in the order they
were made whichever thread sends them.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from typing import Any


class Outbox:
    """The lines of one run in the order they were made (``put`` under the nodes lock), each with
    the callback that sends it (the run's ``on_info`` or ``on_verbose``)."""

    def __init__(self) -> None:
        self._queue: deque[tuple[Callable[[Any], None], Any]] = deque()
        self._sending = threading.Lock()
        """One sender at a time: a report taken from the queue leaves before the next."""

    def put(self, send: Callable[[Any], None], lines: Any) -> None:
        """Queue ``lines`` for ``send`` (made under the nodes lock, so in the run's order)."""
        self._queue.append((send, lines))

    def flush(self) -> None:
        """Send what is queued, in order (without the nodes lock); a callback's exception is the
        caller's, as a direct call's would be (what is left stays queued)."""
        if not self._queue:
            return
        with self._sending:
            while self._queue:
                send, lines = self._queue.popleft()
                send(lines)
