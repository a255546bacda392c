"""The search parameters the compiled phases read, packed into one float64 array (numba
functions take arrays, not dataclasses): ``pack(params, has_mlh)`` and the index names.

:data:`LAYOUT` is the one table of the packed array: each entry's index name and its source, a
:class:`~engine.search.params.SearchParams` field or :data:`HAS_MLH`. The index constants the
compiled modules import are read from it (numba compiles their values in); a constant missing
or out of order fails at import."""

from __future__ import annotations

import numpy as np

from engine.search.params import PARAM_NAMES, SearchParams

HAS_MLH = "has_mlh"
"""The source of an entry that is ``pack``'s ``has_mlh`` (whether the network has a moves-left
head), not a parameter."""

LAYOUT: tuple[tuple[str, str], ...] = (
    ("CPUCT", "cpuct"),
    ("CPUCT_BASE", "cpuct_base"),
    ("CPUCT_FACTOR", "cpuct_factor"),
    ("CPUCT_ROOT", "cpuct_at_root"),
    ("CPUCT_BASE_ROOT", "cpuct_base_at_root"),
    ("CPUCT_FACTOR_ROOT", "cpuct_factor_at_root"),
    ("FPU_ABSOLUTE", "fpu_absolute"),
    ("FPU_VALUE", "fpu_value"),
    ("FPU_ABSOLUTE_ROOT", "fpu_absolute_at_root"),
    ("FPU_VALUE_ROOT", "fpu_value_at_root"),
    ("POLICY_TEMP", "policy_softmax_temp"),
    ("TWO_FOLD", "two_fold_draws"),
    ("STICKY", "sticky_endgames"),
    ("USE_MLH", HAS_MLH),
    ("ML_MAX_EFFECT", "moves_left_max_effect"),
    ("ML_THRESHOLD", "moves_left_threshold"),
    ("ML_SLOPE", "moves_left_slope"),
    ("ML_CONSTANT", "moves_left_constant_factor"),
    ("ML_SCALED", "moves_left_scaled_factor"),
    ("ML_QUADRATIC", "moves_left_quadratic_factor"),
    ("OUT_OF_ORDER", "out_of_order_eval"),
    ("CACHE_HISTORY", "cache_history_length"),
    ("THREADS", "threads"),
    ("IDLING_MIN_WORK", "idling_minimum_work"),
    ("IDLING_THRESHOLD", "thread_idling_threshold"),
)
"""(index name, source) of each entry of the packed array, in order."""

NAMES = tuple(name for name, _ in LAYOUT)
"""The index names, in the packed array's order."""
_SOURCES = tuple(source for _, source in LAYOUT)

CPUCT = NAMES.index("CPUCT")
CPUCT_BASE = NAMES.index("CPUCT_BASE")
CPUCT_FACTOR = NAMES.index("CPUCT_FACTOR")
CPUCT_ROOT = NAMES.index("CPUCT_ROOT")
CPUCT_BASE_ROOT = NAMES.index("CPUCT_BASE_ROOT")
CPUCT_FACTOR_ROOT = NAMES.index("CPUCT_FACTOR_ROOT")
FPU_ABSOLUTE = NAMES.index("FPU_ABSOLUTE")
FPU_VALUE = NAMES.index("FPU_VALUE")
FPU_ABSOLUTE_ROOT = NAMES.index("FPU_ABSOLUTE_ROOT")
FPU_VALUE_ROOT = NAMES.index("FPU_VALUE_ROOT")
POLICY_TEMP = NAMES.index("POLICY_TEMP")
TWO_FOLD = NAMES.index("TWO_FOLD")
STICKY = NAMES.index("STICKY")
USE_MLH = NAMES.index("USE_MLH")
ML_MAX_EFFECT = NAMES.index("ML_MAX_EFFECT")
ML_THRESHOLD = NAMES.index("ML_THRESHOLD")
ML_SLOPE = NAMES.index("ML_SLOPE")
ML_CONSTANT = NAMES.index("ML_CONSTANT")
ML_SCALED = NAMES.index("ML_SCALED")
ML_QUADRATIC = NAMES.index("ML_QUADRATIC")
OUT_OF_ORDER = NAMES.index("OUT_OF_ORDER")
CACHE_HISTORY = NAMES.index("CACHE_HISTORY")
THREADS = NAMES.index("THREADS")
IDLING_MIN_WORK = NAMES.index("IDLING_MIN_WORK")
IDLING_THRESHOLD = NAMES.index("IDLING_THRESHOLD")


def _check_layout() -> None:
    """Every index name is a constant of this module with its index, and every source a field."""
    defined = {name: globals().get(name) for name in NAMES}
    wrong = {name: i for i, name in enumerate(NAMES) if defined[name] != i}
    unknown = [s for s in _SOURCES if s != HAS_MLH and s not in PARAM_NAMES]
    if len(set(NAMES)) != len(NAMES) or wrong or unknown:
        raise ImportError(f"core/params.py: LAYOUT and its constants differ: {wrong} {unknown}")


_check_layout()


def pack(p: SearchParams, has_mlh: bool) -> np.ndarray:
    return np.array(
        [has_mlh if source == HAS_MLH else getattr(p, source) for source in _SOURCES],
        np.float64,
    )
