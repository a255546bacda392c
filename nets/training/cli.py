"""Command line of ``bin/dev/train-net`` (see its docstring and docs/training.md)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

# Imported before jax starts, backend_xla makes one XLA CPU device per core: training splits its
# batches over them.
import backend_xla  # noqa: F401
from engine.options import DEFAULT_NETWORK_FILE, find

DEFAULT_NAME = Path(DEFAULT_NETWORK_FILE).stem

SEARCH_POLICY_TEMPERATURE = 0.5
"""Policy softmax temperature the shipped network plays best at (matches at fixed nodes,
docs/training.md); export folds it into the logits, so engines keep lc0's default temperature."""

WORK_DIR = Path(__file__).resolve().parents[3] / "xlazero-train"
"""Training data and runs live beside the repository (as ../shared does), never inside it."""
DEFAULT_DATA = str(WORK_DIR / "data")
DEFAULT_RUN = str(WORK_DIR / "run")
DATA_STAGES = (
    {"chunks": 84, "positions-per-chunk": 2048, "nodes": 10000, "multipv": 6},
    {"chunks": 172, "positions-per-chunk": 4096, "nodes": 3000, "multipv": 4},
    {"chunks": 538, "positions-per-chunk": 4096, "nodes": 3000, "multipv": 4},
    {"chunks": 400, "positions-per-chunk": 4096, "nodes": 2000, "multipv": 4},
)
"""The shipped network's data: Stockfish runs with seeds S, S+1, ... into one directory; the later
stages, with shallower labels, give 5-8x more positions per CPU hour (docs/training.md)."""
TRAIN_AFTER_STAGE = {1: 8000, 2: 19000, 3: 29000}
"""How the shipped network was trained (stage index: total steps): 8,000 steps once stages 1-2
were there, then the same run continued to 19,000 steps with stage 3 added and to 29,000 with
stage 4 (each time the rest of the cosine schedule reshaped: a warm restart)."""

FINETUNES = (
    {"data": {"chunks": 272, "positions-per-chunk": 4096, "nodes": 2000, "multipv": 4},
     "train": {"steps": 3000, "lr": 3e-4, "warmup": 200}},
    {"data": {"chunks": 366, "positions-per-chunk": 4096, "nodes": 2000, "multipv": 4, "blunder": 0.04},
     "train": {"steps": 3000, "lr": 3e-4, "warmup": 200}},
    {"data": {"chunks": 600, "positions-per-chunk": 4096, "nodes": 2000, "multipv": 4, "blunder": 0.06},
     "train": {"steps": 8000, "lr": 3e-4, "warmup": 200}},
)
"""Later versions, one entry each: new data (its own directory, the next seed), then a new run
started from the previous version's exported .pb.gz (``--init``). The fourth version (v4) is the
first entry: 272 chunks of seed 4, 3,000 steps from v3 (trained with a peak rate of 1e-3 for its
first 600 steps, then resumed at 3e-4; the recipe uses 3e-4 throughout). The fifth (v5): 366
chunks of seed 5 with 4 % random moves (``--blunder``), 3,000 steps from v4. The sixth (v6): all
600 chunks of seed 6 with 6 % random moves, 8,000 steps from v5."""


def _probability(text: str) -> float:
    """argparse type of a probability: a number in [0, 1]."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1], got {text!r}")
    return value


def _datagen_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=DEFAULT_DATA, help="chunk directory (outside the repo)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunks", type=int, default=84,
                   help="chunks to generate in all (84: the shipped network's data)")
    p.add_argument("--positions-per-chunk", type=int, default=2048)
    p.add_argument("--nodes", type=int, default=10000, help="Stockfish nodes per position")
    p.add_argument("--multipv", type=int, default=6)
    p.add_argument("--blunder", type=_probability, default=0.0,
                   help="probability that a move after the opening is a uniformly random legal one "
                        "(positions after blunders, as weak opponents reach)")
    p.add_argument("--start-pgn", nargs="+", default=[], metavar="PGN",
                   help="start games from positions of these PGNs' games instead of sampled "
                        "openings (a random game at a random move of --start-min-move..--start-max-move)")
    p.add_argument("--start-min-move", type=int, default=16,
                   help="first full move (counted from the PGN game's start) a start may be at")
    p.add_argument("--start-max-move", type=int, default=40, help="last such full move")
    p.add_argument("--start-pgn-share", type=_probability, default=1.0,
                   help="probability that a game starts from a PGN position (the rest: sampled openings)")
    p.add_argument("--workers", type=int, default=2, help="Stockfish processes (Threads=1 each)")
    p.add_argument("--stockfish", default=None, help="Stockfish binary (default: PATH, /usr/games)")


def cmd_datagen(a: argparse.Namespace) -> None:
    from .datagen import GenConfig, generate
    cfg = GenConfig(out_dir=a.data, seed=a.seed, chunks=a.chunks,
                    positions_per_chunk=a.positions_per_chunk, nodes=a.nodes,
                    multipv=a.multipv, blunder=a.blunder, workers=a.workers,
                    stockfish=a.stockfish, start_pgn=tuple(a.start_pgn),
                    start_min_move=a.start_min_move, start_max_move=a.start_max_move,
                    start_pgn_share=a.start_pgn_share)
    t0 = time.time()
    generate(cfg)
    print(f"datagen done in {time.time() - t0:.0f} s")


def _train_args(p: argparse.ArgumentParser) -> None:
    from .train import TrainConfig
    p.add_argument("--data", default=DEFAULT_DATA)
    p.add_argument("--run", default=DEFAULT_RUN, help="run directory: config, checkpoint, losses.png")
    for name, field in TrainConfig.__dataclass_fields__.items():
        if name in ("data", "run"):
            continue
        p.add_argument("--" + name.replace("_", "-"), type=type(field.default), default=field.default)


def cmd_train(a: argparse.Namespace) -> None:
    from .train import TrainConfig, train
    cfg = TrainConfig(**{k: getattr(a, k) for k in TrainConfig.__dataclass_fields__})
    t0 = time.time()
    train(cfg, log=lambda msg: print(msg, flush=True))
    print(f"training done in {time.time() - t0:.0f} s")


def _export_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", default=DEFAULT_RUN)
    p.add_argument("--name", default=DEFAULT_NAME, help="file stem: NAME.pb.gz and NAME.onnx")
    p.add_argument("--out-dir", default="nets")
    p.add_argument("--policy-temperature", type=float, default=SEARCH_POLICY_TEMPERATURE,
                   help="softmax temperature the network's policy is meant to be searched at; the "
                        "logits are scaled by PolicyTemperature's default / this (default: %(default)s, "
                        "tuned for the shipped network)")


def policy_scale(search_temperature: float) -> float:
    """Logit scale that makes the engine's default PolicyTemperature act as ``search_temperature``."""
    if not search_temperature > 0:
        raise SystemExit(f"--policy-temperature: expected a positive number, got {search_temperature}")
    return find("PolicyTemperature").default / search_temperature


def cmd_export(a: argparse.Namespace) -> None:
    from .export import export
    from .train import load_params
    params, cfg, step = load_params(a.run)
    out = Path(a.out_dir)
    scale = policy_scale(a.policy_temperature)
    export(params, out / f"{a.name}.pb.gz", out / f"{a.name}.onnx", training_steps=step,
           policy_scale=scale)
    print(f"exported step {step} of {a.run} to {out / a.name}.pb.gz and .onnx "
          f"(policy logits x {scale:.4f}: searched at temperature {a.policy_temperature})")


def _evaluate_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--weights", default=f"nets/{DEFAULT_NETWORK_FILE}", help="network under test")
    p.add_argument("--against", action="append", default=None,
                   choices=["default", "maia", "stockfish"],
                   help="opponents (repeatable; default: all three): the untrained nets/untrained.onnx "
                        "and the --maia network at equal --nodes, Stockfish UCI_Elo=--sf-elo at --clock")
    p.add_argument("--games", type=int, default=20)
    p.add_argument("--nodes", type=int, default=100, help="nodes per move against networks")
    p.add_argument("--maia", default="/work/shared/lc0/maia/maia-1100.onnx",
                   help="the network opponent of --against maia (e.g. ../shared/lc0/maia/maia-1500.onnx)")
    p.add_argument("--sf-elo", type=int, default=1350)
    p.add_argument("--clock", default="10+0.1", help="base+increment seconds against Stockfish")
    p.add_argument("--first-opening", type=int, default=0, help="index of the first book opening")


def cmd_evaluate(a: argparse.Namespace) -> None:
    from .evaluate import ROOT, match, stockfish, xlazero
    base, inc = (float(x) for x in a.clock.split("+"))
    me = xlazero(a.weights, nodes=a.nodes)
    for who in a.against or ["default", "maia", "stockfish"]:
        if who == "default":
            opp = xlazero(str(ROOT / "nets" / "untrained.onnx"), nodes=a.nodes, name="default(untrained)")
        elif who == "maia":
            opp = xlazero(a.maia, nodes=a.nodes, name=Path(a.maia).name)
        else:
            me, opp = xlazero(a.weights, base_s=base, inc_s=inc), stockfish(a.sf_elo, base, inc)
        limit = f"{a.nodes} nodes/move" if who != "stockfish" else f"{a.clock} clock"
        print(f"== {me.name} vs {opp.name}, {a.games} games, {limit}", flush=True)
        result = match(me, opp, a.games, log=lambda m: print(m, flush=True), first_opening=a.first_opening)
        print(f"== RESULT {me.name} vs {opp.name} ({limit}): {result.summary()}", flush=True)


def _flags(values: dict) -> list[str]:
    """{"chunks": 84, ...} as command-line flags ["--chunks", "84", ...]."""
    return [arg for name, value in values.items() for arg in (f"--{name}", str(value))]


def _openings_args(p: argparse.ArgumentParser) -> None:
    from .openings import OpeningConfig
    p.add_argument("--out", required=True, help="EPD file to write")
    for name, field in OpeningConfig.__dataclass_fields__.items():
        p.add_argument("--" + name.replace("_", "-"), type=type(field.default), default=field.default)
    p.add_argument("--stockfish", default=None, help="Stockfish binary (default: on PATH)")


def cmd_openings(a: argparse.Namespace) -> None:
    from .openings import OpeningConfig, balanced_openings, write_epd
    from .stockfish import Stockfish
    cfg = OpeningConfig(**{k: getattr(a, k) for k in OpeningConfig.__dataclass_fields__})
    sf = Stockfish(a.stockfish, multipv=1)
    try:
        boards = balanced_openings(sf, cfg)
    finally:
        sf.close()
    write_epd(boards, a.out)
    print(f"wrote {len(boards)} openings to {a.out} ({cfg})")


def _analyse_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("pgn", help="PGN of games (bin/match, cutechess-cli)")
    p.add_argument("--player", required=True, help="the player's name in the White/Black tags")
    p.add_argument("--weights", default=f"nets/{DEFAULT_NETWORK_FILE}", help="network whose policy "
                   "and value are measured (default: %(default)s)")
    p.add_argument("--compare-weights", default=None, help="a second network (e.g. Maia-1100) whose "
                   "policy and value are measured on the same positions, side by side, by game phase")
    p.add_argument("--max-moves", type=int, default=40, help="moves of each game analysed (full moves)")
    p.add_argument("--nodes", type=int, default=50_000, help="Stockfish nodes per search")
    p.add_argument("--workers", type=int, default=1, help="Stockfish processes (Threads=1 each)")
    p.add_argument("--max-minutes", type=float, default=10.0,
                   help="stop then and report the moves analysed so far (default: %(default)s)")
    p.add_argument("--json", default=None, help="also write the report (and every move) here")
    p.add_argument("--stockfish", default=None, help="Stockfish binary (default: PATH, /usr/games)")


def cmd_analyse(a: argparse.Namespace) -> None:
    from .analyse import analyse_pgn, format_report, write_json
    from .pgnfile import open_pgn
    with open_pgn(a.pgn) as f:
        text = f.read()
    report = analyse_pgn(text, a.player, a.weights, max_moves=a.max_moves,
                         nodes=a.nodes, workers=a.workers, max_minutes=a.max_minutes,
                         stockfish=a.stockfish, log=lambda m: print(m, flush=True),
                         compare_weights=a.compare_weights)
    print(format_report(report))
    if a.json:
        write_json(report, a.json)
        print(f"wrote {a.json}")


def cmd_all(a: argparse.Namespace) -> None:
    """Every stage in order; --quick makes each tiny (a smoke run of a few minutes)."""
    work = Path(a.work)
    q = a.quick
    common = ["--data", str(work / "data")]
    run = ["--run", str(work / "run")]
    if q:
        main(["datagen", *common, "--seed", str(a.seed), "--chunks", "2", "--positions-per-chunk", "128",
              "--nodes", "1000"])
        main(["train", *common, *run, "--seed", str(a.seed), "--blocks", "1", "--filters", "16",
              "--steps", "60", "--batch", "64", "--warmup", "10", "--validate-every", "30",
              "--checkpoint-every", "30"])
    for k, stage in enumerate(() if q else DATA_STAGES):
        main(["datagen", *common, "--seed", str(a.seed + k),
              *_flags(stage)])
        if k in TRAIN_AFTER_STAGE:
            main(["train", *common, *run, "--seed", str(a.seed), "--steps", str(TRAIN_AFTER_STAGE[k])])
    for j, version in enumerate(() if q else FINETUNES, start=1):
        previous = work / f"nets-{j}"
        main(["export", *run, "--out-dir", str(previous), "--name", a.name])
        data = ["--data", str(work / f"data-ft{j}")]
        main(["datagen", *data, "--seed", str(a.seed + len(DATA_STAGES) + j - 1),
              *_flags(version["data"])])
        run = ["--run", str(work / f"run-ft{j}")]
        main(["train", *data, *run, "--seed", str(a.seed), "--init", str(previous / f"{a.name}.pb.gz"),
              "--init-policy-scale", str(policy_scale(SEARCH_POLICY_TEMPERATURE)),
              *_flags(version["train"])])
    out = str(work / "nets") if q else "nets"
    main(["export", *run, "--out-dir", out, "--name", a.name])
    main(["evaluate", "--weights", f"{out}/{a.name}.onnx",
          *(["--against", "default", "--games", "2", "--nodes", "16"] if q else [])])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bin/dev/train-net", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    _datagen_args(sub.add_parser("datagen", help="generate labelled positions with Stockfish"))
    _train_args(sub.add_parser("train", help="train (or continue training) a network"))
    _export_args(sub.add_parser("export", help="write NAME.pb.gz and NAME.onnx from a run"))
    _evaluate_args(sub.add_parser("evaluate", help="matches against the untrained net, Maia, Stockfish"))
    _openings_args(sub.add_parser("openings", help="balanced random openings (EPD) for matches"))
    _analyse_args(sub.add_parser("analyse", help="a player's cp losses, policy agreement and value "
                                 "calibration in a PGN's games, by Stockfish"))
    p = sub.add_parser("all", help="datagen, train, export, evaluate")
    p.add_argument("--quick", action="store_true", help="tiny smoke run (minutes)")
    p.add_argument("--work", default=str(WORK_DIR / "all"), help="data and run directory")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--name", default=DEFAULT_NAME)
    a = parser.parse_args(argv)
    {"datagen": cmd_datagen, "train": cmd_train, "export": cmd_export, "evaluate": cmd_evaluate,
     "openings": cmd_openings, "analyse": cmd_analyse, "all": cmd_all}[a.cmd](a)
    return 0
