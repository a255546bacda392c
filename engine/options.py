"""Every engine option, declared once.

The table :data:`OPTIONS` drives the ``uci`` option list, ``setoption``, the command line
(``--lc0-style-name=value``, parsed by engine/startup/cmdline.py) and the README table
(``python -m engine.options --markdown``).
Names, flags, types, defaults and ranges follow lc0's (src/search/classic/params.cc,
src/engine.cc) where lc0 has the option; :data:`LC0_DIFFERENCES` lists each exception with its
reason (tests/engine/test_lc0_options.py checks lc0's recorded replies against both).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from engine.backend import OptionError  # one class for engine and backend options

CHECK, SPIN, COMBO, STRING, FLOAT = "check", "spin", "combo", "string", "float"
BUTTON = "button"
"""Option kinds. FLOAT is sent to the GUI as a UCI ``string`` (UCI has no float type), as lc0 does.
A BUTTON has no value: ``setoption name X`` presses it (its value reads True), and it has no
command-line flag (lc0's ``ClearTree`` has none)."""

DEFAULT_WEIGHTS = "<default>"
"""WeightsFile value meaning the project's shipped network (``nets/`` + DEFAULT_NETWORK_FILE)."""
DEFAULT_NETWORK_FILE = "xlazero-sf6x64.onnx"
"""The shipped trained network in ``nets/`` (provenance and strength: nets/README.md)."""
DEFAULT_CONFIG_FILE = "lc0.config"
"""ConfigFile's default, lc0's: that file beside the engine if there (engine.startup.cmdline)."""
AUTODISCOVER = "<autodiscover>"
"""WeightsFile value asking for lc0's search: the newest network file in the working directory,
then beside the engine."""


@dataclass(frozen=True)
class Option:
    """One engine option: its UCI name, kind, default, bounds or choices, help and command-line flag."""

    name: str
    kind: str
    default: Any
    help: str
    flag: str
    min: float | None = None
    max: float | None = None
    choices: tuple[str, ...] = ()
    param: str = ""
    """The search parameter (engine.search.SearchParams field) this option sets, if any."""
    inert: str = ""
    """For an lc0 internal with no counterpart here: why it changes nothing (it is accepted with
    lc0's name, type, default and range, so that lc0's configurations load)."""

    def parse(self, text: str) -> Any:
        """Convert a UCI/command-line value to the option's type; raise OptionError if it does not fit."""
        text = text.strip()
        if self.kind == BUTTON:
            return True
        if self.kind == CHECK:
            low = text.lower()
            if low in ("true", "1", "on", "yes"):
                return True
            if low in ("false", "0", "off", "no"):
                return False
            raise OptionError(f"option {self.name}: expected true or false, got {text!r}")
        if self.kind in (SPIN, FLOAT):
            try:
                value: float = int(text) if self.kind == SPIN else float(text)
            except ValueError:
                what = "an integer" if self.kind == SPIN else "a number"
                raise OptionError(f"option {self.name}: expected {what}, got {text!r}") from None
            if (self.min is not None and value < self.min) or (
                self.max is not None and value > self.max
            ):
                raise OptionError(
                    f"option {self.name}: expected a value in [{self.min}, {self.max}], got {text}"
                )
            return value
        if self.kind == COMBO:
            for choice in self.choices:
                if choice.lower() == text.lower():
                    return choice
            raise OptionError(
                f"option {self.name}: expected one of {list(self.choices)}, got {text!r}"
            )
        return text

    def uci_line(self, value: Any = None) -> str:
        """The ``option name … type …`` line of the ``uci`` answer, advertising ``value`` (the
        command line's, as lc0) as the default, or else the option's own default."""
        default = self.default if value is None else value
        if self.kind == BUTTON:
            return f"option name {self.name} type button"
        if self.kind == CHECK:
            return f"option name {self.name} type check default {'true' if default else 'false'}"
        if self.kind == SPIN:
            assert self.min is not None and self.max is not None  # every spin option has bounds
            return f"option name {self.name} type spin default {int(default)} min {int(self.min)} max {int(self.max)}"
        if self.kind == COMBO:
            vars_ = " ".join(f"var {c}" for c in self.choices)
            return f"option name {self.name} type combo default {default} {vars_}"
        text = default if self.kind == STRING else _format_float(default)
        return f"option name {self.name} type string default {text}"


def _format_float(value: float) -> str:
    """The shortest text that reads back as ``value`` (``1.745``, ``38739``): a GUI that sends an
    advertised default back sets exactly that value."""
    text = f"{value:g}"
    return text if float(text) == value else repr(float(value))


def _o(name, kind, default, flag, help, min=None, max=None, choices=(), param="", inert=""):
    return Option(
        name=name,
        kind=kind,
        default=default,
        help=help,
        flag=flag,
        min=min,
        max=max,
        choices=tuple(choices),
        param=param,
        inert=inert,
    )


_TASK_SPLIT = "lc0's thresholds for handing work to task workers, which are not here (TaskWorkers)"

OPTIONS: tuple[Option, ...] = (
    # --- network -------------------------------------------------------------------------------
    _o(
        "WeightsFile",
        STRING,
        DEFAULT_WEIGHTS,
        "weights",
        "Network file (.onnx or lc0 .pb.gz). <default> is the project's shipped network, "
        f"nets/{DEFAULT_NETWORK_FILE} (trained by bin/dev/train-net; see nets/README.md); "
        "<autodiscover> the newest network file in the working directory, else beside the engine.",
    ),
    _o(
        "Backend",
        STRING,
        "xla",
        "backend",
        "Network backend: xla (JAX/XLA) or random (lc0's --backend=random: pseudo-random outputs, "
        "for testing; its BackendOptions take lc0's delay=MS, a simulated accelerator, and seed=N; "
        "lc0=1 gives lc0's own random outputs, bit for bit).",
    ),
    _o(
        "BackendOptions",
        STRING,
        "",
        "backend-opts",
        "Backend parameters in lc0 syntax, e.g. max_batch=64,data_type=bf16 (README, Backend options).",
    ),
    # --- search ------------------------------------------------------------------------------------
    _o(
        "MinibatchSize",
        SPIN,
        0,
        "minibatch-size",
        "Positions gathered for one network evaluation. 0 uses a backend-suggested size.",
        0,
        1024,
        param="minibatch_size",
    ),
    _o(
        "CPuct", FLOAT, 1.745, "cpuct", "cpuct_init of the PUCT formula.", 0.0, 100.0, param="cpuct"
    ),
    _o(
        "CPuctBase",
        FLOAT,
        38739.0,
        "cpuct-base",
        "cpuct_base: cpuct grows by CPuctFactor*ln((N+CPuctBase)/CPuctBase).",
        1.0,
        1e9,
        param="cpuct_base",
    ),
    _o(
        "CPuctFactor",
        FLOAT,
        3.894,
        "cpuct-factor",
        "Multiplier of the cpuct growth term.",
        0.0,
        1000.0,
        param="cpuct_factor",
    ),
    _o(
        "CPuctAtRoot",
        FLOAT,
        1.745,
        "cpuct-at-root",
        "CPuct at the root (with RootHasOwnCpuctParams).",
        0.0,
        100.0,
    ),
    _o(
        "CPuctBaseAtRoot",
        FLOAT,
        38739.0,
        "cpuct-base-at-root",
        "CPuctBase at the root (with RootHasOwnCpuctParams).",
        1.0,
        1e9,
    ),
    _o(
        "CPuctFactorAtRoot",
        FLOAT,
        3.894,
        "cpuct-factor-at-root",
        "CPuctFactor at the root (with RootHasOwnCpuctParams).",
        0.0,
        1000.0,
    ),
    _o(
        "RootHasOwnCpuctParams",
        CHECK,
        False,
        "root-has-own-cpuct-params",
        "Use the *AtRoot cpuct parameters at the root.",
    ),
    _o(
        "FpuStrategy",
        COMBO,
        "reduction",
        "fpu-strategy",
        "First-play urgency of unvisited moves: reduction (parent Q minus FpuValue*sqrt(visited policy)) "
        "or absolute (FpuValue).",
        choices=("reduction", "absolute"),
    ),
    _o(
        "FpuValue",
        FLOAT,
        0.330,
        "fpu-value",
        "FPU reduction or absolute value.",
        -100.0,
        100.0,
        param="fpu_value",
    ),
    _o(
        "FpuStrategyAtRoot",
        COMBO,
        "same",
        "fpu-strategy-at-root",
        "FpuStrategy at the root; same = as FpuStrategy.",
        choices=("reduction", "absolute", "same"),
    ),
    _o(
        "FpuValueAtRoot",
        FLOAT,
        1.0,
        "fpu-value-at-root",
        "FpuValue at the root (unless strategy is same).",
        -100.0,
        100.0,
    ),
    _o(
        "DirichletNoiseEpsilon",
        FLOAT,
        0.0,
        "noise-epsilon",
        "Amount of Dirichlet noise to combine with root priors. This allows the engine to "
        "discover new ideas during training by exploring moves which are known to be bad. Not "
        "normally used during play.",
        0.0,
        1.0,
        param="noise_epsilon",
    ),
    _o(
        "DirichletNoiseAlpha",
        FLOAT,
        0.3,
        "noise-alpha",
        "Alpha of Dirichlet noise to control the sharpness of move probabilities. Larger values "
        "result in flatter / more evenly distributed values.",
        0.0,
        10000000.0,
        param="noise_alpha",
    ),
    _o(
        "HistoryFill",
        COMBO,
        "fen_only",
        "history-fill",
        "Neural network uses 7 previous board positions in addition to the current one. During "
        "the first moves of the game such historical positions don't exist, but they can be "
        "synthesized. This parameter defines when to synthesize them (always, never, or only at "
        "non-standard fen position).",
        choices=("no", "fen_only", "always"),
        param="history_fill",
    ),
    _o(
        "PolicyTemperature",
        FLOAT,
        1.359,
        "policy-softmax-temp",
        "Softmax temperature of the policy head over the legal moves.",
        0.1,
        10.0,
        param="policy_softmax_temp",
    ),
    _o(
        "MaxCollisionEvents",
        SPIN,
        917,
        "max-collision-events",
        "lc0: collision events allowed while gathering one minibatch.",
        1,
        65536,
        inert="lc0's classic search declares it and reads it nowhere since multigather became its "
        "one gather (lc0 #1509): a minibatch ends on MaxCollisionVisits, here as there",
    ),
    _o(
        "MaxCollisionVisits",
        SPIN,
        80000,
        "max-collision-visits",
        "Collision visits allowed while gathering one minibatch (in a big tree; see the scaling options).",
        1,
        100000000,
        param="max_collision_visits",
    ),
    _o(
        "MaxCollisionVisitsScalingStart",
        SPIN,
        28,
        "max-collision-visits-scaling-start",
        "Tree size up to which a minibatch allows 1 collision visit.",
        1,
        100000,
        param="max_collision_visits_scaling_start",
    ),
    _o(
        "MaxCollisionVisitsScalingEnd",
        SPIN,
        145000,
        "max-collision-visits-scaling-end",
        "Tree size from which a minibatch allows MaxCollisionVisits (0: no scaling).",
        0,
        100000000,
        param="max_collision_visits_scaling_end",
    ),
    _o(
        "MaxCollisionVisitsScalingPower",
        FLOAT,
        1.25,
        "max-collision-visits-scaling-power",
        "Power of the growth of the collision limit between the scaling start and end.",
        0.01,
        100.0,
        param="max_collision_visits_scaling_power",
    ),
    _o(
        "MaxPrefetch",
        SPIN,
        32,
        "max-prefetch",
        "A minibatch smaller than this is filled up to it with positions the search will likely visit "
        "next, for the NN cache only. A backend that pads batches (compiled sizes, or a device "
        "whose call costs the same whatever its rows) has its padding filled instead, those rows "
        "being computed anyway. 0: no prefetch.",
        0,
        1024,
        param="max_prefetch",
    ),
    _o(
        "IdlingMinimumWork",
        SPIN,
        0,
        "idling-minimum-work",
        "With Threads above 1: a minibatch holding more positions than this goes to the network "
        "at once, before it is full, when the network would otherwise idle (see "
        "ThreadIdlingThreshold).",
        0,
        10000,
        param="idling_minimum_work",
    ),
    _o(
        "ThreadIdlingThreshold",
        SPIN,
        128,
        "thread-idling-threshold",
        "The network counts as idle while Threads minus the minibatches it is computing is above "
        "this: gathering then stops early and hands over what it has (lc0's partial batches; "
        "lc0's default is 1). Threads or more, as the default: never, which keeps every "
        "minibatch full whatever the network's timing; on a fixed-latency device partial "
        "batches cost nodes/s here (docs/engine.md).",
        0,
        128,
        param="thread_idling_threshold",
    ),
    _o(
        "OutOfOrderEval",
        CHECK,
        True,
        "out-of-order-eval",
        "Back up cache hits and terminal nodes immediately while gathering a minibatch.",
        param="out_of_order_eval",
    ),
    _o(
        "MaxOutOfOrderEvalsFactor",
        FLOAT,
        2.4,
        "max-out-of-order-evals-factor",
        "Out-of-order evaluations allowed per minibatch, as a multiple of MinibatchSize.",
        0.0,
        100.0,
        param="max_out_of_order_evals_factor",
    ),
    _o("ClearTree", BUTTON, False, "", "Clear the tree before the next search."),
    _o(
        "NNCacheSize",
        SPIN,
        200000,
        "nncache",
        "Positions kept in the network evaluation cache (lc0 <= 0.30's default; lc0 0.31+ uses "
        "2000000: 384 MB here, at 192 bytes an entry with its moves).",
        0,
        999999999,
        param="nn_cache_size",
    ),
    _o(
        "CacheHistoryLength",
        SPIN,
        0,
        "cache-history-length",
        "Earlier positions included in the cache key (0: the position and its repetitions only, as lc0).",
        0,
        7,
        param="cache_history_length",
    ),
    _o(
        "TwoFoldDraws",
        CHECK,
        True,
        "two-fold-draws",
        "Score a position repeated once inside the search tree as a draw.",
        param="two_fold_draws",
    ),
    _o(
        "StickyEndgames",
        CHECK,
        True,
        "sticky-endgames",
        "Propagate proven wins, losses and draws up the tree.",
        param="sticky_endgames",
    ),
    _o(
        "SyzygyPath",
        STRING,
        "",
        "syzygy-paths",
        "Folders of Syzygy tablebases (*.rtbw, *.rtbz), separated by ':' (';' on Windows); "
        "empty: none. A root they cover searches only the moves that keep its result; inside "
        "the tree, positions they cover after a capture or pawn move are scored exactly.",
    ),
    _o(
        "SyzygyFastPlay",
        CHECK,
        False,
        "syzygy-fast-play",
        "At a root the tablebases cover, keep the moves by WDL alone instead of by DTZ (faster, "
        "but a won ending may not make progress).",
        param="syzygy_fast_play",
    ),
    _o(
        "SmartPruningFactor",
        FLOAT,
        1.33,
        "smart-pruning-factor",
        "Stop early when the best move cannot be overtaken in the remaining time (0 disables).",
        0.0,
        10.0,
        param="smart_pruning_factor",
    ),
    _o(
        "SmartPruningMinimumBatches",
        SPIN,
        0,
        "smart-pruning-minimum-batches",
        "Smart pruning may stop the search only after this many evaluated batches.",
        0,
        10000,
        param="smart_pruning_minimum_batches",
    ),
    _o(
        "NodesAsPlayouts",
        CHECK,
        False,
        "nodes-as-playouts",
        "Treat UCI `go nodes` command as referring to playouts instead of visits: the search "
        "stops after that many playouts of its own, whatever a reused tree held.",
        param="nodes_as_playouts",
    ),
    _o(
        "MinimumKLDGainPerNode",
        FLOAT,
        0.0,
        "minimum-kldgain-per-node",
        "If greater than 0 search will abort unless the last KLDGainAverageInterval nodes have "
        "an average gain per node of at least this much (the KL divergence of the root's "
        "previous visit distribution from its new one, per node; not in go infinite, ponder "
        "or mate).",
        0.0,
        1.0,
        param="minimum_kld_gain_per_node",
    ),
    _o(
        "KLDGainAverageInterval",
        SPIN,
        100,
        "kldgain-average-interval",
        "Used to decide how frequently to evaluate the average KLDGainPerNode to check the "
        "MinimumKLDGainPerNode, if specified: every this many nodes.",
        1,
        10000000,
        param="kld_gain_average_interval",
    ),
    _o(
        "MovesLeftMaxEffect",
        FLOAT,
        0.0345,
        "moves-left-max-effect",
        "Maximum bonus of the moves-left utility (networks with a moves-left head).",
        0.0,
        1.0,
        param="moves_left_max_effect",
    ),
    _o(
        "MovesLeftThreshold",
        FLOAT,
        0.8,
        "moves-left-threshold",
        "|Q| above which the moves-left utility applies.",
        0.0,
        1.0,
        param="moves_left_threshold",
    ),
    _o(
        "MovesLeftSlope",
        FLOAT,
        0.0027,
        "moves-left-slope",
        "Moves-left utility per ply of difference.",
        0.0,
        1.0,
        param="moves_left_slope",
    ),
    _o(
        "MovesLeftConstantFactor",
        FLOAT,
        0.0,
        "moves-left-constant-factor",
        "Constant term of the moves-left scaling.",
        -1.0,
        1.0,
        param="moves_left_constant_factor",
    ),
    _o(
        "MovesLeftScaledFactor",
        FLOAT,
        1.6521,
        "moves-left-scaled-factor",
        "|Q| term of the moves-left scaling.",
        -2.0,
        2.0,
        param="moves_left_scaled_factor",
    ),
    _o(
        "MovesLeftQuadraticFactor",
        FLOAT,
        -0.6521,
        "moves-left-quadratic-factor",
        "Q^2 term of the moves-left scaling.",
        -1.0,
        1.0,
        param="moves_left_quadratic_factor",
    ),
    _o(
        "DrawScore",
        FLOAT,
        0.0,
        "draw-score",
        "Score of a draw for the side to move at the root (-1..1).",
        -1.0,
        1.0,
        param="draw_score",
    ),
    # --- WDL contempt (engine/search/contempt.py) ----------------------------------------------
    _o(
        "ContemptMode",
        COMBO,
        "play",
        "contempt-mode",
        "Affects the way asymmetric WDL parameters are applied. Default is 'play' for matches, "
        "use 'white_side_analysis' and 'black_side_analysis' for analysis. Use 'disable' to "
        "deactivate contempt.",
        choices=("play", "white_side_analysis", "black_side_analysis", "disable"),
        param="contempt_mode",
    ),
    _o(
        "Contempt",
        STRING,
        "",
        "contempt",
        "The simulated Elo advantage for the WDL conversion. Comma separated list in the form "
        "[name=]value, where the name is compared with the `UCI_Opponent` value to find the "
        "appropriate contempt value. The default value is taken from `UCI_RatingAdv` and will be "
        "overridden if either a value without name is given, or if a name match is found.",
    ),
    _o(
        "ContemptMaxValue",
        FLOAT,
        420.0,
        "contempt-max-value",
        "The maximum value of contempt used. Higher values will be capped.",
        0.0,
        10000.0,
    ),
    _o(
        "WDLCalibrationElo",
        FLOAT,
        0.0,
        "wdl-calibration-elo",
        "Elo of the active side, adjusted for time control relative to rapid. To retain raw WDL "
        "without sharpening/softening, use default value 0.",
        0.0,
        10000.0,
    ),
    _o(
        "WDLContemptAttenuation",
        FLOAT,
        1.0,
        "wdl-contempt-attenuation",
        "Scales how Elo advantage is applied for contempt. Use 1.0 for realistic analysis, and "
        "0.5-0.6 for optimal match performance.",
        -10.0,
        10.0,
    ),
    _o(
        "WDLMaxS",
        FLOAT,
        1.4,
        "wdl-max-s",
        "Limits the WDL derived sharpness s to a reasonable value to avoid erratic behavior at "
        "high contempt values. Default recommended for regular chess, increase value for more "
        "volatile positions like DFRC or piece odds.",
        0.0,
        10.0,
        param="wdl_max_s",
    ),
    _o(
        "WDLEvalObjectivity",
        FLOAT,
        1.0,
        "wdl-eval-objectivity",
        "When calculating the centipawn eval output, decides how objective/contempt influenced "
        "the reported eval should be. Value 0.0 reports the internally used WDL values, 1.0 "
        "attempts an objective eval.",
        0.0,
        1.0,
        param="wdl_eval_objectivity",
    ),
    _o(
        "WDLDrawRateTarget",
        FLOAT,
        0.0,
        "wdl-draw-rate-target",
        "To define the accuracy of play, the target draw rate in equal positions is used as a "
        "proxy. Ignored if WDLCalibrationElo is set. To retain raw WDL without "
        "sharpening/softening, use default value 0.",
        0.0,
        0.999,
    ),
    _o(
        "WDLDrawRateReference",
        FLOAT,
        0.5,
        "wdl-draw-rate-reference",
        "Set this to the draw rate predicted by the used neural network at default settings. The "
        "accuracy rescaling is done relative to the reference draw rate.",
        0.001,
        0.999,
    ),
    _o(
        "WDLBookExitBias",
        FLOAT,
        0.65,
        "wdl-book-exit-bias",
        "The book exit bias used when measuring engine Elo. Value of startpos is around 0.2, "
        "value of 50% white win is 1. Only relevant if target draw rate is above 80%; ignored if "
        "WDLCalibrationElo is set.",
        -2.0,
        2.0,
    ),
    _o(
        "UCI_Opponent",
        STRING,
        "",
        "uci-opponent",
        "UCI option used by the GUI to pass the name and other information about the current "
        "opponent (matched against Contempt's names).",
    ),
    _o(
        "UCI_RatingAdv",
        FLOAT,
        0.0,
        "uci-rating-adv",
        "UCI extension used by some GUIs to pass the estimated Elo advantage over the current "
        "opponent, used as the default contempt value.",
        -10000.0,
        10000.0,
    ),
    _o(
        "Temperature",
        FLOAT,
        0.0,
        "temperature",
        "Choose the move at random with probability N^(1/T); 0 plays the most visited move.",
        0.0,
        100.0,
        param="temperature",
    ),
    _o(
        "TempDecayMoves",
        SPIN,
        0,
        "tempdecay-moves",
        "Moves over which Temperature decays linearly to 0 (0: no decay).",
        0,
        640,
        param="temp_decay_moves",
    ),
    _o(
        "TempDecayDelayMoves",
        SPIN,
        0,
        "tempdecay-delay-moves",
        "Moves before the decay starts.",
        0,
        100,
        param="temp_decay_delay_moves",
    ),
    _o(
        "TempCutoffMove",
        SPIN,
        0,
        "temp-cutoff-move",
        "From this move on TempEndgame is used (0: never).",
        0,
        1000,
        param="temp_cutoff_move",
    ),
    _o(
        "TempEndgame",
        FLOAT,
        0.0,
        "temp-endgame",
        "Temperature from TempCutoffMove on.",
        0.0,
        100.0,
        param="temp_endgame",
    ),
    _o(
        "TempValueCutoff",
        FLOAT,
        100.0,
        "temp-value-cutoff",
        "Moves whose win percentage is more than this below the best are never chosen by temperature.",
        0.0,
        100.0,
        param="temp_value_cutoff",
    ),
    _o(
        "TempVisitOffset",
        FLOAT,
        0.0,
        "temp-visit-offset",
        "Added to visit counts before temperature.",
        -1000.0,
        1000.0,
        param="temp_visit_offset",
    ),
    _o(
        "MultiPV",
        SPIN,
        1,
        "multipv",
        "Number of principal variations reported.",
        1,
        500,
        param="multipv",
    ),
    _o(
        "PerPVCounters",
        CHECK,
        False,
        "per-pv-counters",
        "Report nodes of each PV's move in MultiPV.",
        param="per_pv_counters",
    ),
    _o(
        "ScoreType",
        COMBO,
        "WDL_mu",
        "score-type",
        "How `score cp` is computed from the WDL.",
        choices=(
            "centipawn",
            "centipawn_with_drawscore",
            "centipawn_2019",
            "centipawn_2018",
            "win_percentage",
            "Q",
            "W-L",
            "WDL_mu",
        ),
        param="score_type",
    ),
    _o(
        "VerboseMoveStats",
        CHECK,
        False,
        "verbose-move-stats",
        "Print N, P, Q, D, M, U, S, V of every root move before bestmove.",
    ),
    _o(
        "LogLiveStats",
        CHECK,
        False,
        "log-live-stats",
        "Print the verbose stats with every info update.",
    ),
    _o(
        "RamLimitMb",
        SPIN,
        0,
        "ramlimit-mb",
        "Stop the search when its tree and NN cache hold this much memory, counted in bytes "
        "(the cache's table whole once used, 32 bytes an entry of NNCacheSize; 0: no limit).",
        0,
        100000000,
    ),
    _o(
        "NodesPerSecondLimit",
        FLOAT,
        0.0,
        "nps-limit",
        "An option to specify an upper limit to the nodes per second searched: after each "
        "minibatch a search thread waits while the search's playouts a second (from its first "
        "playout) are above it. The accuracy depends on the minibatch size used, increasing "
        "for lower sizes, and on the length of the search. Zero to disable.",
        0.0,
        1e6,
        param="nps_limit",
    ),
    # --- time --------------------------------------------------------------------------------------
    _o(
        "MoveOverheadMs",
        SPIN,
        200,
        "move-overhead",
        "Time kept in reserve for each move (GUI and network lag).",
        0,
        100000000,
    ),
    _o(
        "TimeManager",
        STRING,
        "legacy",
        "time-manager",
        "Name and config of a time manager, as lc0's: legacy (default), smooth, alphazero or "
        "simple, optionally with lc0's parameters in its syntax, e.g. "
        "legacy(slowmover=1.0,midpoint-move=51.5,steepness=7.0,immediate-use=1.0,"
        "first-move-bonus=1.8,book-ply-bonus=0.25), alphazero(alphazero-time-pct=12.0), "
        "smooth(init-piggybank=0.09,max-move-budget=0.42,mle-legacy(midpoint=45.2,steepness=5.93)) "
        "(engine/timemgr.py lists every key). legacy keeps a larger reserve than lc0's.",
    ),
    _o(
        "StrictTiming",
        CHECK,
        False,
        "strict-uci-timing",
        "The UCI host compensates for lag, waits for the 'readyok' reply before sending 'go' and "
        "only then starts timing.",
    ),
    _o(
        "Ponder",
        CHECK,
        False,
        "ponder",
        "Declared for GUIs, which set it true when they will send go ponder (lc0's default false); "
        "here go ponder and ponderhit work either way (lc0 refuses go ponder with Ponder off).",
    ),
    # --- UCI ---------------------------------------------------------------------------------------
    _o("UCI_ShowWDL", CHECK, False, "show-wdl", "Add `wdl W D L` (per mille) to info lines."),
    _o(
        "UCI_ShowEPS",
        CHECK,
        False,
        "show-eps",
        "Add `eps N` (network evaluations per second) to info lines, as lc0.",
    ),
    _o(
        "UCI_ShowMovesLeft",
        CHECK,
        False,
        "show-movesleft",
        "Add `movesleft N` (plies, networks with a moves-left head) to info lines, as lc0.",
    ),
    _o(
        "Threads",
        SPIN,
        0,
        "threads",
        "Search threads, as lc0's: each gathers a minibatch from the one tree, evaluates it "
        "and backs it up, so Threads minibatches are in flight at most. 0: automatic, the "
        "host's cores up to 2 (more gathered nothing more on two cores, and each thread's "
        "minibatch is gathered knowing less of the others'). 1: a repeatable search.",
        0,
        128,
        param="threads",
    ),
    # --- lc0 internals with no counterpart here: accepted, they change nothing -----------------
    _o(
        "TaskWorkers",
        SPIN,
        -1,
        "task-workers",
        "lc0: helper threads that share each search thread's gathering (-1: a heuristic).",
        -1,
        128,
        inert="the search threads are the one way to use cores here: their gathers run side by "
        "side, and helpers inside one gained nothing on two cores or on 16 "
        "(docs/engine.md, 'Search threads')",
    ),
    _o(
        "MaxConcurrentSearchers",
        SPIN,
        1,
        "max-concurrent-searchers",
        "lc0: at most this many search threads gather minibatches at once (0: no limit).",
        0,
        128,
        inert="the search threads' gathers run side by side here, with no limit (the tree's "
        "updates are atomic; docs/engine.md, 'Search threads')",
    ),
    _o(
        "MinimumProcessingWork",
        SPIN,
        20,
        "minimum-processing-work",
        "lc0: visits gathered before task workers help process them.",
        2,
        100000,
        inert=_TASK_SPLIT,
    ),
    _o(
        "MinimumPickingWork",
        SPIN,
        1,
        "minimum-picking-work",
        "lc0: branches with more visits than this may go to task workers.",
        1,
        100000,
        inert=_TASK_SPLIT,
    ),
    _o(
        "MinimumRemainingPickingWork",
        SPIN,
        20,
        "minimum-remaining-picking-work",
        "lc0: a branch goes to task workers only if this much work is left after it.",
        0,
        100000,
        inert=_TASK_SPLIT,
    ),
    _o(
        "MinimumPerTaskProcessing",
        SPIN,
        8,
        "minimum-per-task-processing",
        "lc0: processing is not split into chunks smaller than this.",
        1,
        100000,
        inert=_TASK_SPLIT,
    ),
    _o(
        "SearchSpinBackoff",
        CHECK,
        False,
        "search-spin-backoff",
        "lc0: back off in the spin lock by which search threads take turns.",
        inert="the search threads' one spin lock here (a backup's values along its path) is "
        "held for microseconds; the nodes lock is waited for in the kernel",
    ),
    _o(
        "GarbageCollectionDelay",
        FLOAT,
        10.0,
        "garbage-collection-delay",
        "lc0: percentage of the move's time before freeing the discarded tree starts.",
        0.0,
        100.0,
        inert="tree reuse copies the kept subtree into fresh arrays: nothing is left to free",
    ),
    _o(
        "SolidTreeThreshold",
        SPIN,
        100,
        "solid-tree-threshold",
        "lc0: nodes with this many visits get their children in one array, for cache locality.",
        1,
        2000000000,
        inert="every node's children are one block of the tree's arrays already",
    ),
    _o("UCI_Chess960", CHECK, False, "chess960", "Chess960 castling (king takes rook) in moves."),
    _o(
        "LogFile",
        STRING,
        "",
        "logfile",
        "Append the UCI dialogue and lc0's log lines (start, network, why a search stopped, "
        "move stats) to this file (empty: no log; <stderr>: standard error, as lc0).",
    ),
    _o(
        "ConfigFile",
        STRING,
        DEFAULT_CONFIG_FILE,
        "config",
        "Path to a configuration file, read at the start, as lc0's: one command-line flag a line "
        "(--weights=/path/to/net or weights=/path/to/net; # comments), before the command "
        "line's. lc0.config: the file of that name beside the engine (bin/), if there; empty: "
        "none. Setting it later changes nothing, as in lc0.",
    ),
)


@dataclass(frozen=True)
class Lc0Difference:
    """lc0 options that are not here as lc0 declares them (name, type, default, range, flag),
    what is here instead, and why. tests/engine/test_lc0_options.py checks lc0's recorded
    ``uci`` and ``--show-hidden`` replies against the options and this table, both ways."""

    names: tuple[str, ...]
    here: str
    why: str


LC0_DIFFERENCES: tuple[Lc0Difference, ...] = (
    Lc0Difference(
        ("WeightsFile",),
        "default `<default>` (lc0 `<autodiscover>`)",
        "a start without --weights plays the shipped network; `<autodiscover>` works as lc0's",
    ),
    Lc0Difference(
        ("Backend",),
        "a string: xla, random (lc0 a combo of its compiled backends)",
        "lc0's backends (blas, cuda, …) are not here; the XLA one runs lc0's networks",
    ),
    Lc0Difference(
        ("ThreadIdlingThreshold",),
        "default 128 (lc0 1)",
        "full minibatches whatever the network's timing; partial batches cost nodes/s on a "
        "fixed-latency device (docs/engine.md)",
    ),
    Lc0Difference(
        ("NNCacheSize",),
        "default 200000 (lc0 2000000)",
        "lc0 0.30's default; 2000000 would be 384 MB here (192 bytes an entry)",
    ),
)


def lc0_inert_markdown() -> str:
    """The lc0 internals accepted here, one line each with why it changes nothing."""
    reasons: dict[str, list[str]] = {}
    for o in OPTIONS:
        if o.inert:
            reasons.setdefault(o.inert, []).append(f"`{o.name}`")
    return "\n".join(f"- {', '.join(names)}: {why}." for why, names in reasons.items())


def lc0_differences_markdown() -> str:
    """:data:`LC0_DIFFERENCES` as a markdown table for the README."""
    lines = ["| lc0 option | here | why |", "|---|---|---|"]
    for d in LC0_DIFFERENCES:
        names = ", ".join(f"`{n}`" for n in d.names)
        lines.append(f"| {names} | {d.here} | {d.why} |")
    return "\n".join(lines)


BY_NAME: dict[str, Option] = {o.name.lower(): o for o in OPTIONS}
BY_FLAG: dict[str, Option] = {o.flag: o for o in OPTIONS if o.flag}


def find(name: str) -> Option:
    """Option by UCI name (case-insensitive, as UCI wants); OptionError names the known ones."""
    option = BY_NAME.get(name.strip().lower())
    if option is None:
        known = ", ".join(o.name for o in OPTIONS)
        raise OptionError(f"unknown option {name!r}: expected one of {known}")
    return option


def defaults() -> dict[str, Any]:
    """Option name -> default value."""
    return {o.name: o.default for o in OPTIONS}


def parse_pairs(pairs: Iterable[str]) -> dict[str, Any]:
    """``NAME=VALUE`` strings (UCI names, as setoption) -> {name: value}; OptionError otherwise."""
    values: dict[str, Any] = {}
    for pair in pairs:
        name, sep, text = pair.partition("=")
        if not sep:
            raise OptionError(f"expected NAME=VALUE, got {pair!r}")
        option = find(name)
        values[option.name] = option.parse(text)
    return values


def markdown_table() -> str:
    """The options as a markdown table for the README."""
    lines = [
        "| UCI option | flag | type | default | range / choices | meaning |",
        "|---|---|---|---|---|---|",
    ]
    for o in OPTIONS:
        if o.kind == BUTTON:
            default = "—"
        elif o.kind == CHECK:
            default = "true" if o.default else "false"
        elif o.kind == FLOAT:
            default = _format_float(o.default)
        else:
            default = str(o.default) if o.default != "" else "(empty)"
        if o.kind == COMBO:
            rng = ", ".join(o.choices)
        elif o.kind in (SPIN, FLOAT):
            rng = f"{o.min:g} … {o.max:g}"
        else:
            rng = ""
        kind = "number" if o.kind == FLOAT else o.kind
        help_ = (o.help + (f" Changes nothing here: {o.inert}." if o.inert else "")).replace(
            "|", "\\|"
        )
        flag = f"`--{o.flag}`" if o.flag else "—"
        default = f"`{default}`" if o.kind != BUTTON else default
        lines.append(f"| `{o.name}` | {flag} | {kind} | {default} | {rng} | {help_} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    import argparse  # here: its import (gettext's regexes) is 0.02 s of every engine start

    parser = argparse.ArgumentParser(description="xlazero options")
    parser.add_argument(
        "--markdown", action="store_true", help="print the options as a markdown table"
    )
    args = parser.parse_args(argv)
    if args.markdown:
        print(markdown_table())
    else:
        for o in OPTIONS:
            print(o.uci_line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
