"""Search parameters (lc0's classic SearchParams) as a frozen value built from the option values."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Mapping

from engine import options as opts

DEFAULT_MINIBATCH = 256
"""Minibatch size when MinibatchSize is 0 and the network suggests none (lc0's generic default)."""

DEFAULT_MAX_TREE_NODES = 1_000_000
"""Tree growth stops at this many visits when RamLimitMb is 0 (Python nodes cost ~1.5 KB each)."""

BYTES_PER_NODE = 1600
"""Approximate memory of one expanded node (Python object + five float64 edge arrays)."""


@dataclass(frozen=True)
class SearchParams:
    """lc0 classic-search constants; names as lc0's params.h without the ``k`` prefix."""

    minibatch_size: int = 0
    cpuct: float = 1.745
    cpuct_base: float = 38739.0
    cpuct_factor: float = 3.894
    cpuct_at_root: float = 1.745
    cpuct_base_at_root: float = 38739.0
    cpuct_factor_at_root: float = 3.894
    fpu_absolute: bool = False
    fpu_value: float = 0.330
    fpu_absolute_at_root: bool = False
    fpu_value_at_root: float = 0.330
    policy_softmax_temp: float = 1.359
    max_collision_events: int = 917
    max_collision_visits: int = 80000
    max_collision_visits_scaling_start: int = 28
    max_collision_visits_scaling_end: int = 145000
    max_collision_visits_scaling_power: float = 1.25
    max_prefetch: int = 32
    out_of_order_eval: bool = True
    max_out_of_order_evals_factor: float = 2.4
    nn_cache_size: int = 200000
    cache_history_length: int = 0
    two_fold_draws: bool = True
    sticky_endgames: bool = True
    smart_pruning_factor: float = 1.33
    smart_pruning_minimum_batches: int = 0
    moves_left_max_effect: float = 0.0345
    moves_left_threshold: float = 0.8
    moves_left_slope: float = 0.0027
    moves_left_constant_factor: float = 0.0
    moves_left_scaled_factor: float = 1.6521
    moves_left_quadratic_factor: float = -0.6521
    draw_score: float = 0.0
    temperature: float = 0.0
    temp_decay_moves: int = 0
    temp_decay_delay_moves: int = 0
    temp_cutoff_move: int = 0
    temp_endgame: float = 0.0
    temp_value_cutoff: float = 100.0
    temp_visit_offset: float = 0.0
    multipv: int = 1
    per_pv_counters: bool = False
    score_type: str = "WDL_mu"
    max_tree_nodes: int = DEFAULT_MAX_TREE_NODES
    syzygy_fast_play: bool = False

    def cpuct_params(self, at_root: bool) -> tuple[float, float, float]:
        """(init, base, factor) for the root or the other nodes."""
        if at_root:
            return self.cpuct_at_root, self.cpuct_base_at_root, self.cpuct_factor_at_root
        return self.cpuct, self.cpuct_base, self.cpuct_factor

    def batch_size(self, max_batch: int, preferred: int | None = None) -> int:
        """Minibatch size: the option; when it is 0, the backend's suggestion (``preferred``,
        else DEFAULT_MINIBATCH) within the backend's maximum."""
        if self.minibatch_size > 0:
            return self.minibatch_size
        return max(1, min(max_batch, preferred or DEFAULT_MINIBATCH))

    def collision_visit_limit(self, tree_size: int) -> int:
        """Collision visits a minibatch may collect in a tree of ``tree_size`` visits (lc0's
        CalculateCollisionsLeft): 1 in a small tree, MaxCollisionVisits from the scaling end,
        growing as ((size - start) / (end - start)) ** power in between. A small tree gains more
        from one evaluation than from many visits piled onto the few leaves it has."""
        start, end = self.max_collision_visits_scaling_start, self.max_collision_visits_scaling_end
        if end <= 0 or tree_size >= end:
            return self.max_collision_visits
        if tree_size <= start:
            return 1
        share = ((tree_size - start) / (end - start)) ** self.max_collision_visits_scaling_power
        return max(1, int(share * self.max_collision_visits))


def from_options(values: Mapping[str, Any]) -> SearchParams:
    """Build SearchParams from UCI option values (name -> value, defaults for missing names)."""
    v = dict(opts.defaults())
    v.update(values)
    own_root = bool(v["RootHasOwnCpuctParams"])
    fpu_absolute = v["FpuStrategy"] == "absolute"
    root_strategy = v["FpuStrategyAtRoot"]
    ram = int(v["RamLimitMb"])
    return SearchParams(
        minibatch_size=int(v["MinibatchSize"]),
        cpuct=float(v["CPuct"]),
        cpuct_base=float(v["CPuctBase"]),
        cpuct_factor=float(v["CPuctFactor"]),
        cpuct_at_root=float(v["CPuctAtRoot"] if own_root else v["CPuct"]),
        cpuct_base_at_root=float(v["CPuctBaseAtRoot"] if own_root else v["CPuctBase"]),
        cpuct_factor_at_root=float(v["CPuctFactorAtRoot"] if own_root else v["CPuctFactor"]),
        fpu_absolute=fpu_absolute,
        fpu_value=float(v["FpuValue"]),
        fpu_absolute_at_root=(root_strategy == "same" and fpu_absolute) or root_strategy == "absolute",
        fpu_value_at_root=float(v["FpuValue"] if root_strategy == "same" else v["FpuValueAtRoot"]),
        policy_softmax_temp=float(v["PolicyTemperature"]),
        max_collision_events=int(v["MaxCollisionEvents"]),
        max_collision_visits=int(v["MaxCollisionVisits"]),
        max_collision_visits_scaling_start=int(v["MaxCollisionVisitsScalingStart"]),
        max_collision_visits_scaling_end=int(v["MaxCollisionVisitsScalingEnd"]),
        max_collision_visits_scaling_power=float(v["MaxCollisionVisitsScalingPower"]),
        max_prefetch=int(v["MaxPrefetch"]),
        out_of_order_eval=bool(v["OutOfOrderEval"]),
        max_out_of_order_evals_factor=float(v["MaxOutOfOrderEvalsFactor"]),
        nn_cache_size=int(v["NNCacheSize"]),
        cache_history_length=int(v["CacheHistoryLength"]),
        two_fold_draws=bool(v["TwoFoldDraws"]),
        sticky_endgames=bool(v["StickyEndgames"]),
        smart_pruning_factor=float(v["SmartPruningFactor"]),
        smart_pruning_minimum_batches=int(v["SmartPruningMinimumBatches"]),
        moves_left_max_effect=float(v["MovesLeftMaxEffect"]),
        moves_left_threshold=float(v["MovesLeftThreshold"]),
        moves_left_slope=float(v["MovesLeftSlope"]),
        moves_left_constant_factor=float(v["MovesLeftConstantFactor"]),
        moves_left_scaled_factor=float(v["MovesLeftScaledFactor"]),
        moves_left_quadratic_factor=float(v["MovesLeftQuadraticFactor"]),
        draw_score=float(v["DrawScore"]),
        temperature=float(v["Temperature"]),
        temp_decay_moves=int(v["TempDecayMoves"]),
        temp_decay_delay_moves=int(v["TempDecayDelayMoves"]),
        temp_cutoff_move=int(v["TempCutoffMove"]),
        temp_endgame=float(v["TempEndgame"]),
        temp_value_cutoff=float(v["TempValueCutoff"]),
        temp_visit_offset=float(v["TempVisitOffset"]),
        multipv=int(v["MultiPV"]),
        per_pv_counters=bool(v["PerPVCounters"]),
        score_type=str(v["ScoreType"]),
        syzygy_fast_play=bool(v["SyzygyFastPlay"]),
        max_tree_nodes=(ram * 1_000_000 // BYTES_PER_NODE) if ram > 0 else DEFAULT_MAX_TREE_NODES,
    )


PARAM_NAMES = tuple(f.name for f in fields(SearchParams))
