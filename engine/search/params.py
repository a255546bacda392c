"""Search parameters (lc0's classic SearchParams) as a frozen value built from the option values."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from engine import options as opts
from engine.search.contempt import WdlRescale, WdlRescaleParams, for_search, rescale_params
from engine.search.core.calls import direct
from engine.search.core.collisions import collision_visits

_collision_visits = direct(collision_visits)
"""Asked before every minibatch: without numba's per-call dispatch."""

AUTO_THREADS_MAX = 2
"""Threads 0 (automatic): the host's cores, up to this many search threads. On the 2-core host
two gave the most nodes/s (docs/engine.md, "Search threads"); past the cores they only wait."""

DEFAULT_MAX_TREE_NODES = 2**31 - 2**24
"""The cap on the tree: as memory allows (RamLimitMb), as lc0's, up to what the tree's
int32 indices and visit counts hold (2**31), less room for the batches in flight."""


def _field_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """SearchParams fields from option values (name -> value; the table's defaults fill in)."""
    v = dict(opts.defaults())
    v.update(values)
    out = {o.param: v[o.name] for o in opts.OPTIONS if o.param}
    out.update(_derived(v))
    return out


def _derived(v: Mapping[str, Any]) -> dict[str, Any]:
    """The fields lc0 derives from several options: the root's cpuct and FPU (the root's own
    values only when asked for), RamLimitMb in bytes, Threads 0's number of threads, and the
    WDL rescaling of the contempt options (engine/search/contempt.py)."""
    own_root = bool(v["RootHasOwnCpuctParams"])
    fpu_absolute = v["FpuStrategy"] == "absolute"
    root_strategy = v["FpuStrategyAtRoot"]
    ram = int(v["RamLimitMb"])
    return dict(
        cpuct_at_root=float(v["CPuctAtRoot"] if own_root else v["CPuct"]),
        cpuct_base_at_root=float(v["CPuctBaseAtRoot"] if own_root else v["CPuctBase"]),
        cpuct_factor_at_root=float(v["CPuctFactorAtRoot"] if own_root else v["CPuctFactor"]),
        fpu_absolute=fpu_absolute,
        fpu_absolute_at_root=(root_strategy == "same" and fpu_absolute)
        or root_strategy == "absolute",
        fpu_value_at_root=float(v["FpuValue"] if root_strategy == "same" else v["FpuValueAtRoot"]),
        ram_limit_bytes=ram * 1_000_000,
        threads=int(v["Threads"]) or auto_threads(),
        max_tree_nodes=DEFAULT_MAX_TREE_NODES,
        wdl_rescale=rescale_params(v),
    )


def auto_threads() -> int:
    """The search threads of Threads 0: the cores this process may run on, up to
    :data:`AUTO_THREADS_MAX`."""
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cores = os.cpu_count() or 1
    return max(1, min(AUTO_THREADS_MAX, cores))


def from_options(values: Mapping[str, Any]) -> SearchParams:
    """Build SearchParams from UCI option values (name -> value, defaults for missing names)."""
    return SearchParams(**_field_values(values))


def _defaults_from_options(cls: type) -> type:
    """Make ``cls`` a frozen dataclass whose field defaults are the option table's."""
    for name, value in _field_values({}).items():
        if name not in cls.__annotations__:
            raise TypeError(f"option parameter {name!r}: expected a field of {cls.__name__}")
        setattr(cls, name, value)
    missing = set(cls.__annotations__) - set(_field_values({}))
    if missing:
        raise TypeError(f"{cls.__name__} fields without an option: {sorted(missing)}")
    return dataclass(frozen=True)(cls)


@_defaults_from_options
class SearchParams:
    """lc0 classic-search constants; names as lc0's params.h without the ``k`` prefix.

    Every default comes from the option table (engine.options.OPTIONS): a field is set either
    by the option whose ``param`` names it, or, for the few lc0 derives, by
    :func:`_derived`. ``SearchParams()`` is the defaults; ``from_options`` reads option values.
    """

    minibatch_size: int
    threads: int
    cpuct: float
    cpuct_base: float
    cpuct_factor: float
    cpuct_at_root: float
    cpuct_base_at_root: float
    cpuct_factor_at_root: float
    fpu_absolute: bool
    fpu_value: float
    fpu_absolute_at_root: bool
    fpu_value_at_root: float
    policy_softmax_temp: float
    history_fill: str
    noise_epsilon: float
    noise_alpha: float
    max_collision_visits: int
    max_collision_visits_scaling_start: int
    max_collision_visits_scaling_end: int
    max_collision_visits_scaling_power: float
    max_prefetch: int
    idling_minimum_work: int
    thread_idling_threshold: int
    out_of_order_eval: bool
    max_out_of_order_evals_factor: float
    nn_cache_size: int
    cache_history_length: int
    two_fold_draws: bool
    sticky_endgames: bool
    smart_pruning_factor: float
    smart_pruning_minimum_batches: int
    nodes_as_playouts: bool
    """``go nodes`` counts this search's playouts (lc0's PlayoutsStopper), not the root's
    visits with a reused tree's (VisitsStopper)."""
    minimum_kld_gain_per_node: float
    """lc0's KldGainStopper (core/stoppers.py :class:`KldGain`; 0: none)."""
    kld_gain_average_interval: int
    moves_left_max_effect: float
    moves_left_threshold: float
    moves_left_slope: float
    moves_left_constant_factor: float
    moves_left_scaled_factor: float
    moves_left_quadratic_factor: float
    draw_score: float
    contempt_mode: str
    wdl_rescale: WdlRescaleParams
    """lc0's kWDLRescaleParams: the ratio and diff of Contempt, UCI_Opponent, UCI_RatingAdv,
    ContemptMaxValue, WDLCalibrationElo, WDLContemptAttenuation, WDLDrawRateTarget,
    WDLDrawRateReference and WDLBookExitBias."""
    wdl_max_s: float
    wdl_eval_objectivity: float
    temperature: float
    temp_decay_moves: int
    temp_decay_delay_moves: int
    temp_cutoff_move: int
    temp_endgame: float
    temp_value_cutoff: float
    temp_visit_offset: float
    multipv: int
    per_pv_counters: bool
    score_type: str
    ram_limit_bytes: int
    """RamLimitMb in bytes (0: no limit): the search stops when the bytes its tree and NN cache
    hold reach it (counted, not estimated from the visits: a visit costs 150 to 500 bytes by
    the position's legal moves and the cache's fill)."""
    nps_limit: float
    """NodesPerSecondLimit (0: none): each search thread waits after its minibatch while the
    run's nodes/s is above it, and smart pruning counts on it as the nodes/s (lc0's
    StoppersHints estimated nps)."""
    syzygy_fast_play: bool
    max_tree_nodes: int
    """The tree's own cap (its int32 indices): reported when reached, never overflowed."""

    def cpuct_params(self, at_root: bool) -> tuple[float, float, float]:
        """(init, base, factor) for the root or the other nodes."""
        if at_root:
            return self.cpuct_at_root, self.cpuct_base_at_root, self.cpuct_factor_at_root
        return self.cpuct, self.cpuct_base, self.cpuct_factor

    def rescale_for(self, root_white: bool, infinite: bool) -> WdlRescale:
        """The WDL rescaling of a search whose root has ``root_white`` to move
        (engine.search.contempt.for_search; ``infinite``: ``go infinite``)."""
        return for_search(
            self.contempt_mode,
            self.wdl_rescale,
            self.wdl_max_s,
            self.wdl_eval_objectivity,
            root_white,
            infinite,
        )

    def batch_size(self, max_batch: int, preferred: int) -> int:
        """Minibatch size: the option; when it is 0, the backend's suggestion (``preferred``)
        within the backend's maximum."""
        if self.minibatch_size > 0:
            return self.minibatch_size
        return max(1, min(max_batch, preferred))

    def collision_visit_limit(self, tree_size: float) -> int:
        """Collision visits a minibatch may collect in a tree of ``tree_size`` visits (lc0's
        CalculateCollisionsLeft): 1 in a small tree, MaxCollisionVisits from the scaling end,
        growing as ((size - start) / (end - start)) ** power in between. A small tree gains more
        from one evaluation than from many visits piled onto the few leaves it has."""
        return int(
            _collision_visits(
                int(tree_size),
                self.max_collision_visits_scaling_start,
                self.max_collision_visits_scaling_end,
                np.float32(self.max_collision_visits_scaling_power),
                self.max_collision_visits,
            )
        )


PARAM_NAMES = tuple(f.name for f in fields(SearchParams))  # type: ignore[arg-type]  # a dataclass made by _defaults_from_options
