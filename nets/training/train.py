"""Training loop: JAX gradients, a hand-written AdamW, validation, checkpoints and resumption.

    loss = CE(policy target, softmax of logits over legal moves) + value_weight * CE(WDL target, wdl)

The value weight defaults to 0.5: every position of a game shares nearly the same WDL label, so
with a few thousand games the value head memorises games (measured: training value loss 0.35
against validation 1.09 after 750 steps at weight 1.0) long before the policy stops improving.

With several local devices (``bin/dev/train-net`` makes one XLA CPU device per core, as the engine
does) each batch is split across them and the parameters are replicated: the same jitted step,
partitioned by XLA, which all-reduces the gradient of the whole batch's mean loss. XLA's CPU
convolutions run on one thread, so on 2 cores this trains about 1.4x faster than one device
(docs/training.md).

A run directory holds ``config.json``, ``checkpoint.npz`` (params, Adam moments, step, loss
history; replaced atomically every ``checkpoint_every`` steps) and ``losses.png``. Starting a run
on a directory with a checkpoint continues it (the same config, possibly more ``steps``), and new
data chunks are picked up every ``refresh_every`` steps, so a run can go on in the background.
"""

from __future__ import annotations

import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass
from functools import cached_property, partial
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from .dataset import Batch, PositionSet
from .model import NetConfig, forward, init_params
from .plot import write_loss_png

ILLEGAL_LOGIT = -1e9
"""Illegal moves are masked out of the policy softmax, as the engine only ever looks at legal ones."""
ADAM_B1, ADAM_B2, ADAM_EPS = 0.9, 0.999, 1e-8


@dataclass(frozen=True)
class TrainConfig:
    """Hyperparameters of a run (saved to ``config.json``)."""

    data: str
    run: str
    blocks: int = 6
    filters: int = 64
    seed: int = 0
    steps: int = 8000
    batch: int = 256
    lr: float = 2e-3
    warmup: int = 300
    final_lr_fraction: float = 0.05
    weight_decay: float = 1e-4
    value_weight: float = 0.5
    checkpoint_every: int = 200
    validate_every: int = 250
    refresh_every: int = 200
    validation_positions: int = 8192
    init: str = ""
    """lc0 weight file (.pb.gz) of the same architecture to start from instead of random weights
    (a new run only; a checkpoint wins), e.g. the shipped network, to train it on further data."""
    init_policy_scale: float = 1.0
    """The policy scale ``init`` was exported with (its logits are divided by it): 1.359/0.5 for
    the shipped network (bin/dev/train-net export --policy-temperature 0.5)."""

    @property
    def net(self) -> NetConfig:
        return NetConfig(self.blocks, self.filters)


def learning_rate(cfg: TrainConfig, step: int) -> float:
    """Linear warm-up, then cosine decay to ``final_lr_fraction`` of ``lr`` at ``steps``.

    A Python float in both phases: numpy's float64 from the cosine reaches ``train_step`` as
    another argument type than the warm-up's float (JAX's strong and weak f32), and compiled it
    a second time (1.2 s for the tests' 1-block network)."""
    if step < cfg.warmup:
        return cfg.lr * (step + 1) / cfg.warmup
    t = min(1.0, (step - cfg.warmup) / max(1, cfg.steps - cfg.warmup))
    cosine = 0.5 * (1.0 + math.cos(math.pi * t))
    return cfg.lr * (cfg.final_lr_fraction + (1 - cfg.final_lr_fraction) * cosine)


def losses(params, planes, policy, legal, wdl):
    """(policy CE, value CE, policy accuracy) over a batch; shapes as :class:`dataset.Batch`."""
    logits, wdl_logits = forward(params, planes)
    logp = jax.nn.log_softmax(jnp.where(legal, logits, ILLEGAL_LOGIT), axis=-1)
    pol = -jnp.sum(policy * jnp.where(legal, logp, 0.0), axis=-1).mean()
    val = -jnp.sum(wdl * jax.nn.log_softmax(wdl_logits, axis=-1), axis=-1).mean()
    acc = (jnp.argmax(logp, -1) == jnp.argmax(policy, -1)).mean()
    return pol, val, acc


def _total(params, value_weight, *batch):
    pol, val, acc = losses(params, *batch)
    return pol + value_weight * val, (pol, val, acc)


@partial(jax.jit, static_argnames=("weight_decay", "value_weight"))
def train_step(params, m, v, step, lr, planes, policy, legal, wdl, weight_decay=0.0, value_weight=1.0):
    """One AdamW step; returns new (params, m, v) and (policy, value, accuracy)."""
    grads, aux = jax.grad(_total, has_aux=True)(params, value_weight, planes, policy, legal, wdl)
    t = step + 1.0
    m = jax.tree_util.tree_map(lambda a, g: ADAM_B1 * a + (1 - ADAM_B1) * g, m, grads)
    v = jax.tree_util.tree_map(lambda a, g: ADAM_B2 * a + (1 - ADAM_B2) * g * g, v, grads)
    c1, c2 = 1 - ADAM_B1 ** t, 1 - ADAM_B2 ** t

    def update(p, a, b):
        decay = weight_decay * p if p.ndim > 1 else 0.0  # no decay on biases
        return p - lr * ((a / c1) / (jnp.sqrt(b / c2) + ADAM_EPS) + decay)

    return jax.tree_util.tree_map(update, params, m, v), m, v, aux


eval_losses = jax.jit(losses)


def _flatten(tree) -> tuple[list[np.ndarray], object]:
    leaves, treedef = jax.tree_util.tree_flatten(tree)
    return [np.asarray(x) for x in leaves], treedef


def save_checkpoint(path: Path, params, m, v, step: int, history: dict) -> None:
    arrays = {}
    for name, tree in (("p", params), ("m", m), ("v", v)):
        for i, leaf in enumerate(_flatten(tree)[0]):
            arrays[f"{name}{i}"] = leaf
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez(tmp, step=step, history=json.dumps(history), **arrays)
    os.replace(tmp, path)


def load_checkpoint(path: Path, template) -> tuple[dict, dict, dict, int, dict]:
    """(params, m, v, step, history) with the tree structure of ``template`` (params)."""
    treedef = jax.tree_util.tree_structure(template)
    n = treedef.num_leaves
    with np.load(path) as z:
        trees = [jax.tree_util.tree_unflatten(treedef, [jnp.asarray(z[f"{k}{i}"]) for i in range(n)])
                 for k in "pmv"]
        return trees[0], trees[1], trees[2], int(z["step"]), json.loads(str(z["history"]))


def load_params(run: str | os.PathLike) -> tuple[dict, TrainConfig, int]:
    """Trained params of a run directory, its config and its step."""
    cfg = TrainConfig(**json.loads((Path(run) / "config.json").read_text()))
    params, _, _, step, _ = load_checkpoint(Path(run) / "checkpoint.npz", init_params(cfg.net, cfg.seed))
    return params, cfg, step


@dataclass(frozen=True)
class Placement:
    """Where a step runs: parameters replicated, batch rows split over ``devices`` (one: no split)."""

    devices: tuple

    @staticmethod
    def for_batch(batch: int, devices: list | None = None) -> "Placement":
        """All local devices when they divide ``batch``, otherwise the first one alone."""
        devices = list(jax.local_devices() if devices is None else devices)
        return Placement(tuple(devices if batch % len(devices) == 0 else devices[:1]))

    @cached_property
    def _mesh(self) -> Mesh:  # built once per placement, not at every step
        return Mesh(np.array(self.devices), ("batch",))

    def replicate(self, tree):
        return jax.device_put(tree, NamedSharding(self._mesh, PartitionSpec()))

    @cached_property
    def _rows(self) -> NamedSharding:
        return NamedSharding(self._mesh, PartitionSpec("batch"))

    def split(self, *arrays: np.ndarray) -> list:
        """Each array [B, ...] cut along B into one slice per device."""
        if len(self.devices) == 1:
            return [jax.device_put(a, self.devices[0]) for a in arrays]
        return [jax.device_put(a, self._rows) for a in arrays]


def validate(params, val: PositionSet, batch: int,
             placement: Placement | None = None) -> tuple[float, float, float]:
    totals = np.zeros(3)
    n = 0
    for start in range(0, len(val), batch):
        rows = np.arange(start, min(start + batch, len(val)))
        b = val.batch(rows)
        arrays = (b.planes, b.policy, b.legal, b.wdl)
        if placement is not None and len(rows) == batch:
            arrays = placement.split(*arrays)
        out = eval_losses(params, *arrays)
        totals += np.array([float(x) for x in out]) * len(rows)
        n += len(rows)
    return tuple(totals / max(n, 1))


def _progress(step: int, total: int, t0: float, step0: int, text: str) -> None:
    done = step - step0
    rate = done / max(time.time() - t0, 1e-9)
    eta = (total - step) / rate if rate > 0 else 0
    bar = "#" * int(30 * step / total)
    print(f"\r[{bar:<30}] {step}/{total} {rate:.2f} it/s eta {eta / 60:.0f} min {text}",
          end="", file=sys.stderr, flush=True)


def train(cfg: TrainConfig, log=print) -> dict:
    """Run (or continue) training; returns the final params."""
    run = Path(cfg.run)
    run.mkdir(parents=True, exist_ok=True)
    ckpt = run / "checkpoint.npz"
    config_path = run / "config.json"
    if config_path.exists():
        old = json.loads(config_path.read_text())
        fixed = ("blocks", "filters", "seed")
        if any(old[k] != getattr(cfg, k) for k in fixed):
            raise ValueError(f"{run}: existing run has architecture/seed "
                             f"{ {k: old[k] for k in fixed} }; use another --run directory")
    config_path.write_text(json.dumps(asdict(cfg), indent=1))
    params = init_params(cfg.net, cfg.seed)
    zeros = lambda: jax.tree_util.tree_map(jnp.zeros_like, params)  # noqa: E731
    m, v, step, history = zeros(), zeros(), 0, {"train": [], "val": []}
    if ckpt.exists():
        params, m, v, step, history = load_checkpoint(ckpt, params)
        log(f"resumed {ckpt} at step {step}")
    elif cfg.init:
        from .export import params_from_weights
        params = jax.tree_util.tree_map(jnp.asarray, params_from_weights(cfg.init, params, cfg.init_policy_scale))
        log(f"initialised from {cfg.init} (policy logits / {cfg.init_policy_scale:g})")
    train_set = PositionSet(cfg.data, validation=False)
    val_set = PositionSet(cfg.data, validation=True, max_positions=cfg.validation_positions)
    log(f"data: {len(train_set)} training, {len(val_set)} validation positions")
    if len(train_set) == 0:
        raise ValueError(f"{cfg.data}: no training chunks")
    placement = Placement.for_batch(cfg.batch)
    params, m, v = placement.replicate((params, m, v))
    log(f"devices: batch {cfg.batch} split over {len(placement.devices)} "
        f"({', '.join(str(d) for d in placement.devices)})")
    if step == 0 and cfg.init and len(val_set):
        # The starting point's own validation losses: what the further training is measured against.
        vl = validate(params, val_set, cfg.batch, placement)
        history["val"].append([0, *vl])
        log(f"step 0 ({cfg.init}): validation policy {vl[0]:.4f} value {vl[1]:.4f} acc {vl[2]:.3f}")
    t0, step0, window = time.time(), step, []
    while step < cfg.steps:
        if step % cfg.refresh_every == 0 and step > step0:
            if train_set.refresh() + val_set.refresh():
                log(f"\ndata: {len(train_set)} training, {len(val_set)} validation positions")
        # Batch k depends on (seed, k) only, so a resumed run sees what an uninterrupted one would.
        rows = np.random.default_rng([cfg.seed, step]).integers(0, len(train_set), cfg.batch)
        b: Batch = train_set.batch(rows)
        params, m, v, aux = train_step(params, m, v, float(step), learning_rate(cfg, step),
                                       *placement.split(b.planes, b.policy, b.legal, b.wdl),
                                       weight_decay=cfg.weight_decay, value_weight=cfg.value_weight)
        step += 1
        window.append([float(x) for x in aux])
        if step % 20 == 0 or step == cfg.steps:
            mean = np.mean(window, axis=0)
            history["train"].append([step, *mean.tolist()])
            window = []
            _progress(step, cfg.steps, t0, step0,
                      f"policy {mean[0]:.3f} value {mean[1]:.3f} acc {mean[2]:.3f}")
        if (step % cfg.validate_every == 0 or step == cfg.steps) and len(val_set):
            vl = validate(params, val_set, cfg.batch, placement)
            history["val"].append([step, *vl])
            log(f"\nstep {step}: validation policy {vl[0]:.4f} value {vl[1]:.4f} acc {vl[2]:.3f}")
        if step % cfg.checkpoint_every == 0 or step == cfg.steps:
            save_checkpoint(ckpt, params, m, v, step, history)
            write_loss_png(run / "losses.png", history)
    print(file=sys.stderr)
    return params
