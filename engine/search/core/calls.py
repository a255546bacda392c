"""Calling compiled functions from the search loop without numba's per-call dispatch.

A call through a numba dispatcher first types every argument to pick the machine code (about
4 µs a call, and about 0.5 µs more an array inside a record such as the tree or a batch);
the search loop makes several such calls a minibatch, which at lc0's CPU minibatch of 7 is a
tenth of a node's cost. :func:`direct` makes the dispatcher's choice once and then calls the
machine code's entry point, which unboxes the arguments as that signature says.

Every dispatcher so wrapped is listed in :data:`WRAPPED`: tests/engine/search/
test_compiled_boundary.py runs searches through the dispatchers themselves and checks that
each still has exactly one signature, i.e. that every call site passes the same types.

Both hooks here read numba's internals (``overloads[sig].entry_point``, the ``_nrt`` option):
where a numba differs, each falls back to numba's own behaviour and says so in :data:`STATUS`
(tests/test_private_hooks.py asserts both take effect on the pinned numba).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from numba.core.cpu import CPUTargetOptions

UNCOUNTED: dict[str, Any] = {"_nrt": False} if hasattr(CPUTargetOptions, "_nrt") else {}
"""numba's flag for a function compiled without reference counting (core/gather.py's docstring
says why): numba's own but not documented; where a numba lacks it, the counts stay."""

STATUS: dict[str, Any] = {"uncounted": bool(UNCOUNTED), "entry_points": 0, "fallbacks": 0}
"""Whether the hooks took effect: ``uncounted`` (numba has the ``_nrt`` option), and how many
:func:`direct` calls found their machine code's entry point (``entry_points``) or, where this
numba keeps it elsewhere, stayed with the dispatcher (``fallbacks``)."""


def direct_calls_took_effect() -> bool | None:
    """Whether :func:`direct` calls reach their machine code (None: none has been called yet)."""
    if STATUS["fallbacks"]:
        return False
    return True if STATUS["entry_points"] else None


WRAPPED: list[tuple[Callable[..., Any], Any]] = []
"""``(call, dispatcher)`` for each :func:`direct` made, in the order they were made."""


def direct(dispatcher: Any) -> Callable[..., Any]:
    """``dispatcher`` (an ``@njit`` function), called directly once it has exactly one
    signature. Only for call sites whose argument types never change (the same dtypes,
    dimensions and record types every call): a call with other types would be misread."""
    entry: list[Callable[..., Any]] = []

    def call(*args: Any) -> Any:
        if entry:
            return entry[0](*args)
        result = dispatcher(*args)
        if len(dispatcher.signatures) == 1:
            try:
                point = dispatcher.overloads[dispatcher.signatures[0]].entry_point
            except (AttributeError, KeyError, TypeError):
                point = dispatcher  # another numba: typed at every call, as numba does
                STATUS["fallbacks"] += 1
            else:
                STATUS["entry_points"] += 1
            entry.append(point)
        return result

    call.__name__ = getattr(dispatcher, "__name__", "direct")
    call.__doc__ = getattr(dispatcher, "__doc__", None)
    WRAPPED.append((call, dispatcher))
    return call
