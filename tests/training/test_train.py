"""The training loop end to end on a tiny data set: checkpoints, resumption, export of a run."""

from __future__ import annotations

import jax
import numpy as np

from engine.training.datagen import GenConfig, chunk_path, make_chunk
from engine.training.dataset import VALIDATION_EVERY
from engine.training.records import write_chunk
from engine.training.train import TrainConfig, load_params, train

from test_records import CFG, FakeEngine


def _data(directory) -> None:
    directory.mkdir()
    gen = GenConfig(out_dir=str(directory), **CFG)
    for k in (0, VALIDATION_EVERY - 1):  # one training chunk, one validation chunk
        write_chunk(chunk_path(gen, k), make_chunk(FakeEngine(), gen, k))


def test_resumed_run_equals_an_uninterrupted_one(tmp_path):
    _data(tmp_path / "data")
    # warmup > steps: the learning rate of the first steps does not depend on the total.
    common = dict(data=str(tmp_path / "data"), blocks=1, filters=8, batch=8, warmup=10,
                  checkpoint_every=2, validate_every=2, refresh_every=2)
    straight = train(TrainConfig(run=str(tmp_path / "a"), steps=4, **common), log=lambda m: None)
    train(TrainConfig(run=str(tmp_path / "b"), steps=2, **common), log=lambda m: None)
    resumed = train(TrainConfig(run=str(tmp_path / "b"), steps=4, **common), log=lambda m: None)
    for x, y in zip(jax.tree_util.tree_leaves(straight), jax.tree_util.tree_leaves(resumed)):
        np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-6, atol=1e-7)
    params, cfg, step = load_params(tmp_path / "b")
    assert step == 4 and cfg.steps == 4
    assert (tmp_path / "b" / "losses.png").stat().st_size > 0
