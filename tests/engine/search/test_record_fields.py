"""The compiled core's record arrays are read field by field as attributes (``batch.coll.k``):
a field named like an array attribute (``max``, ``size``, ``T``, ...) is read by numba as the
attribute instead, and the gather failed to compile from an empty cache (a collision record's
``max`` field, 2026-12-02; the suite's warm cache had hidden it)."""

from __future__ import annotations

import importlib
import pkgutil

import numpy as np

import engine.search.core as core


def test_no_record_field_is_named_like_an_array_attribute():
    taken = set(dir(np.ndarray))
    found = []
    for info in pkgutil.iter_modules(core.__path__):
        module = importlib.import_module(f"engine.search.core.{info.name}")
        for name, value in vars(module).items():
            if isinstance(value, np.dtype) and value.names:
                found += [f"{info.name}.{name}.{f}" for f in value.names if f in taken]
    assert not found, f"expected record fields apart from numpy's array attributes, got {found}"
