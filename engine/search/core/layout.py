"""The packed arrays that cross the numba boundary, each with its one table of named slots.

Compiled functions take arrays, not records, so a few small int64 arrays carry named values
between Python and the compiled phases (a walk's constants, a batch's counts, a search's
counters, the root's summary, a gather's limits). Each has a :class:`Layout` in its compiled
module; the index constants that module compiles in are read from the layout
(:meth:`Layout.indices`, checked at import: a name missing or out of order fails there), and
Python fills and reads the array by name (:meth:`Layout.pack`, :meth:`Layout.read`), never by
position (tests/engine/search/test_boundary_layouts.py checks the sources for a bare index).
``core/params.py``'s LAYOUT is the float64 one of the search parameters.
"""

from __future__ import annotations

import numpy as np


class Layout:
    """The slots of one packed int64 array: ``array`` names it in errors, ``names`` (one
    string, space-separated) are its slots in order."""

    def __init__(self, array: str, names: str) -> None:
        self.array = array
        self.names: tuple[str, ...] = tuple(names.split())
        self._slots = frozenset(self.names)
        if len(self._slots) != len(self.names):
            raise ImportError(f"{array}: a slot named twice in {self.names}")
        self.size = len(self.names)

    def indices(self, names: str) -> range:
        """The slots' indices, for ``A, B, C = LAYOUT.indices("A B C")``: the names must be
        the layout's, all of them and in order (else ImportError, at the importing module)."""
        given = tuple(names.split())
        if given != self.names:
            raise ImportError(f"{self.array}: expected slots {self.names}, got {given}")
        return range(self.size)

    def index(self, name: str) -> int:
        try:
            return self.names.index(name)
        except ValueError:
            raise KeyError(f"{self.array}: expected one of {self.names}, got {name!r}") from None

    def new(self) -> np.ndarray:
        """The array, all slots 0."""
        return np.zeros(self.size, np.int64)

    def pack(self, **values: int) -> np.ndarray:
        """The array with every slot given by name (all of them: a missing or unknown name is
        a TypeError that names both)."""
        if values.keys() != self._slots:
            missing = [n for n in self.names if n not in values]
            unknown = [n for n in values if n not in self.names]
            raise TypeError(
                f"{self.array}: expected values for {self.names}, got {tuple(values)} "
                f"(missing {missing}, unknown {unknown})"
            )
        return np.array([values[n] for n in self.names], np.int64)

    def read(self, array: np.ndarray) -> dict[str, int]:
        """Each slot's value by name."""
        if array.shape != (self.size,):
            raise ValueError(f"{self.array}: expected shape ({self.size},), got {array.shape}")
        return {name: int(array[i]) for i, name in enumerate(self.names)}
