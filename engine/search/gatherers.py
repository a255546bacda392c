"""Gathering a minibatch on several threads (lc0's task workers, option ``TaskWorkers``): the
search thread and ``TaskWorkers`` helper threads share each round of selection, descending
disjoint subtrees at once (engine/search/core/split.py says how, and why the result is the
one thread's)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

from engine.search.core import split
from engine.search.core.calls import direct

helper = direct(split.helper)


class Gatherers:
    """The buffers of the search thread and ``helpers`` threads gathering minibatches of up to
    ``rows`` rows over a history of ``history`` rows, and the helpers' threads."""

    def __init__(self, helpers: int, rows: int, history: int) -> None:
        self.helpers, self.rows, self.history = helpers, rows, history
        self.crew = split.new_crew(helpers + 1, rows, history)
        self._gen = 0
        self._pool = ThreadPoolExecutor(max(1, helpers), thread_name_prefix="gather")

    def start(self, tree: Any, params: Any, cache: Any, batch: Any, walk: Any) -> int:
        """The helpers started for the next gather (the compiled gather with these arguments);
        returns the gather's number, which the gather ends."""
        self._gen = self._gen % (1 << 30) + 1
        self.crew.control[split.ROUND] = self._gen << 32  # open, no round yet
        for g in range(1, self.helpers + 1):
            self._pool.submit(helper, tree, params, cache, batch, walk, self.crew, g, self._gen)
        return self._gen

    def fitting(self, helpers: int, rows: int, history: int) -> Gatherers:
        """These gatherers, or (closed) new ones when they do not fit ``helpers`` helpers,
        batches of ``rows`` rows and a history of ``history`` rows."""
        if self.helpers == helpers and (
            not helpers or (self.rows >= rows and self.history == history)
        ):
            return self
        self.close()
        return Gatherers(helpers, rows, history)

    def close(self) -> None:
        self._pool.shutdown(wait=False)
