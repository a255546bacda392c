"""NN cache: network results by position key, least recently used evicted first (lc0's NNCache)."""

from __future__ import annotations

from array import array
from collections import OrderedDict
from dataclasses import dataclass

import chess


@dataclass(frozen=True)
class CachedEval:
    """A network result ready to expand a node: legal moves sorted by prior, their priors, q/d/m.

    q, d, m are from the view of the side to move in the evaluated position.
    """

    moves: tuple[chess.Move, ...]
    priors: array
    q: float
    d: float
    m: float


class NNCache:
    """Bounded LRU map key -> CachedEval; ``capacity`` 0 disables caching."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._items: OrderedDict[object, CachedEval] = OrderedDict()

    def get(self, key: object) -> CachedEval | None:
        item = self._items.get(key)
        if item is not None:
            self._items.move_to_end(key)
        return item

    def put(self, key: object, value: CachedEval) -> None:
        if self.capacity <= 0:
            return
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self.capacity:
            self._items.popitem(last=False)

    def resize(self, capacity: int) -> None:
        self.capacity = capacity
        while len(self._items) > max(capacity, 0):
            self._items.popitem(last=False)

    def clear(self) -> None:
        self._items.clear()

    def __len__(self) -> int:
        return len(self._items)

    def hashfull(self) -> int:
        """Fill in per mille, as UCI's ``hashfull``."""
        return 0 if self.capacity <= 0 else min(1000, len(self._items) * 1000 // self.capacity)
