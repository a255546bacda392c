"""Command line of ``bin/train-net`` (see its docstring and docs/training.md)."""

from __future__ import annotations

import argparse
import time

DEFAULT_DATA = "/work/data/xlazero-train/data"
DEFAULT_RUN = "/work/data/xlazero-train/run"


def _datagen_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data", default=DEFAULT_DATA, help="chunk directory (outside the repo)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--chunks", type=int, default=600, help="chunks to generate in all")
    p.add_argument("--positions-per-chunk", type=int, default=2048)
    p.add_argument("--nodes", type=int, default=10000, help="Stockfish nodes per position")
    p.add_argument("--multipv", type=int, default=6)
    p.add_argument("--workers", type=int, default=2, help="Stockfish processes (Threads=1 each)")
    p.add_argument("--stockfish", default=None, help="Stockfish binary (default: PATH, /usr/games)")


def cmd_datagen(a: argparse.Namespace) -> None:
    from .datagen import GenConfig, generate
    cfg = GenConfig(out_dir=a.data, seed=a.seed, chunks=a.chunks,
                    positions_per_chunk=a.positions_per_chunk, nodes=a.nodes,
                    multipv=a.multipv, workers=a.workers, stockfish=a.stockfish)
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
    p.add_argument("--name", default="xlazero-sf6x64", help="file stem: NAME.pb.gz and NAME.onnx")
    p.add_argument("--out-dir", default="nets")


def cmd_export(a: argparse.Namespace) -> None:
    from pathlib import Path

    from .export import export
    from .train import load_params
    params, cfg, step = load_params(a.run)
    out = Path(a.out_dir)
    export(params, out / f"{a.name}.pb.gz", out / f"{a.name}.onnx", training_steps=step)
    print(f"exported step {step} of {a.run} to {out / a.name}.pb.gz and .onnx")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="bin/train-net", description=__doc__)
    sub = parser.add_subparsers(dest="cmd", required=True)
    _datagen_args(sub.add_parser("datagen", help="generate labelled positions with Stockfish"))
    _train_args(sub.add_parser("train", help="train (or continue training) a network"))
    _export_args(sub.add_parser("export", help="write NAME.pb.gz and NAME.onnx from a run"))
    a = parser.parse_args(argv)
    {"datagen": cmd_datagen, "train": cmd_train, "export": cmd_export}[a.cmd](a)
    return 0
