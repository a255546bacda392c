"""The search parameters the compiled phases read, packed into one float64 array (numba
functions take arrays, not dataclasses): ``pack(params, has_mlh)`` and the index names."""

from __future__ import annotations

import numpy as np

from engine.search.params import SearchParams

_NAMES = (
    "CPUCT",
    "CPUCT_BASE",
    "CPUCT_FACTOR",
    "CPUCT_ROOT",
    "CPUCT_BASE_ROOT",
    "CPUCT_FACTOR_ROOT",
    "FPU_ABSOLUTE",
    "FPU_VALUE",
    "FPU_ABSOLUTE_ROOT",
    "FPU_VALUE_ROOT",
    "POLICY_TEMP",
    "TWO_FOLD",
    "STICKY",
    "USE_MLH",
    "ML_MAX_EFFECT",
    "ML_THRESHOLD",
    "ML_SLOPE",
    "ML_CONSTANT",
    "ML_SCALED",
    "ML_QUADRATIC",
    "OUT_OF_ORDER",
    "CACHE_HISTORY",
)
(
    CPUCT,
    CPUCT_BASE,
    CPUCT_FACTOR,
    CPUCT_ROOT,
    CPUCT_BASE_ROOT,
    CPUCT_FACTOR_ROOT,
    FPU_ABSOLUTE,
    FPU_VALUE,
    FPU_ABSOLUTE_ROOT,
    FPU_VALUE_ROOT,
    POLICY_TEMP,
    TWO_FOLD,
    STICKY,
    USE_MLH,
    ML_MAX_EFFECT,
    ML_THRESHOLD,
    ML_SLOPE,
    ML_CONSTANT,
    ML_SCALED,
    ML_QUADRATIC,
    OUT_OF_ORDER,
    CACHE_HISTORY,
) = range(len(_NAMES))


def pack(p: SearchParams, has_mlh: bool) -> np.ndarray:
    return np.array(
        [
            p.cpuct,
            p.cpuct_base,
            p.cpuct_factor,
            p.cpuct_at_root,
            p.cpuct_base_at_root,
            p.cpuct_factor_at_root,
            p.fpu_absolute,
            p.fpu_value,
            p.fpu_absolute_at_root,
            p.fpu_value_at_root,
            p.policy_softmax_temp,
            p.two_fold_draws,
            p.sticky_endgames,
            has_mlh,
            p.moves_left_max_effect,
            p.moves_left_threshold,
            p.moves_left_slope,
            p.moves_left_constant_factor,
            p.moves_left_scaled_factor,
            p.moves_left_quadratic_factor,
            p.out_of_order_eval,
            p.cache_history_length,
        ],
        np.float64,
    )
