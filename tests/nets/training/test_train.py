"""The training loop end to end on a tiny data set: checkpoints, resumption, export of a run."""

from __future__ import annotations

import argparse

import jax
import numpy as np
import pytest

from nets.training.datagen import GenConfig, chunk_path, make_chunk
from nets.training.dataset import VALIDATION_EVERY
from nets.training.records import write_chunk
from nets.training.model import init_params
from nets.training.train import TrainConfig, learning_rate, load_params, train

from test_records import CFG, FakeEngine


def _data(directory) -> None:
    directory.mkdir()
    gen = GenConfig(out_dir=str(directory), **CFG)
    for k in (0, VALIDATION_EVERY - 1):  # one training chunk, one validation chunk
        write_chunk(chunk_path(gen, k), make_chunk(FakeEngine(), gen, k))


@pytest.mark.slow  # a tool's further end-to-end run (docs/performance.md, "The test suite's time")
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


def test_all_reproduces_the_shipped_recipe_in_order(monkeypatch):
    """`bin/dev/train-net all`: each data stage with its own seed, training continued after the stages
    named in TRAIN_AFTER_STAGE (one run directory, growing step totals), then export and evaluate."""
    from nets.training import cli

    calls = []
    monkeypatch.setattr(cli, "main", lambda argv: calls.append(argv) or 0)
    cli.cmd_all(argparse.Namespace(work="/w", quick=False, seed=5, name="net"))
    kinds = [c[0] for c in calls]
    expected = []
    for k in range(len(cli.DATA_STAGES)):
        expected.append("datagen")
        if k in cli.TRAIN_AFTER_STAGE:
            expected.append("train")
    for _ in cli.FINETUNES:
        expected += ["export", "datagen", "train"]
    assert kinds == expected + ["export", "evaluate"]
    opt = lambda argv, name: argv[argv.index(name) + 1]  # noqa: E731
    seeds = [int(opt(c, "--seed")) for c in calls if c[0] == "datagen"]
    assert seeds == [5 + k for k in range(len(cli.DATA_STAGES) + len(cli.FINETUNES))]
    for c, stage in zip([c for c in calls if c[0] == "datagen"], cli.DATA_STAGES):
        assert all(opt(c, f"--{name}") == str(value) for name, value in stage.items())
    n_main = len(cli.DATA_STAGES) + len(cli.TRAIN_AFTER_STAGE)
    main_calls, later = calls[:n_main], calls[n_main:-2]
    trains = [c for c in main_calls if c[0] == "train"]
    steps = [int(opt(c, "--steps")) for c in trains]
    assert steps == sorted(steps) == list(cli.TRAIN_AFTER_STAGE.values())
    assert {opt(c, "--run") for c in trains} == {"/w/run"}
    assert {opt(c, "--data") for c in main_calls} == {"/w/data"}
    # Each later version: export the previous run, new data with the next seed, a run from that file.
    previous_run = "/w/run"
    datagen_parser = argparse.ArgumentParser()
    cli._datagen_args(datagen_parser)
    for j, version in enumerate(cli.FINETUNES):
        export, datagen, train = later[3 * j: 3 * j + 3]
        assert opt(export, "--run") == previous_run
        assert int(opt(datagen, "--seed")) == 5 + len(cli.DATA_STAGES) + j
        assert all(opt(datagen, f"--{name}") == str(value) for name, value in version["data"].items())
        datagen_parser.parse_args(datagen[1:])  # every flag of the recipe is one datagen knows
        assert opt(train, "--data") == opt(datagen, "--data") != "/w/data"
        assert opt(train, "--init") == f"{opt(export, '--out-dir')}/net.pb.gz"
        assert float(opt(train, "--init-policy-scale")) == pytest.approx(
            cli.policy_scale(cli.SEARCH_POLICY_TEMPERATURE))
        previous_run = opt(train, "--run")
        assert previous_run != "/w/run"
    assert opt(calls[-2], "--run") == previous_run and opt(calls[-2], "--out-dir") == "nets"


def test_export_policy_temperature_sets_the_logit_scale_and_rejects_nonsense():
    """The scale makes the engine's default PolicyTemperature act as the requested temperature."""
    from engine.options import find
    from nets.training import cli

    default = find("PolicyTemperature").default
    assert cli.policy_scale(0.5) * 0.5 == pytest.approx(default)
    assert cli.policy_scale(default) == pytest.approx(1.0)
    with pytest.raises(SystemExit, match="expected a positive number, got 0.0"):
        cli.policy_scale(0.0)


def test_a_new_run_can_start_from_a_weight_file(tmp_path):
    """--init: a run whose weights come from an lc0 file (at learning rate 0 they stay the file's)."""
    from nets.training.export import export
    _data(tmp_path / "data")
    common = dict(data=str(tmp_path / "data"), blocks=1, filters=8, batch=8, warmup=1, steps=2,
                  checkpoint_every=2, validate_every=2, refresh_every=2)
    first = train(TrainConfig(run=str(tmp_path / "a"), seed=1, **common), log=lambda m: None)
    export(first, tmp_path / "a.pb.gz", policy_scale=3.0)
    logs = []
    again = train(TrainConfig(run=str(tmp_path / "b"), seed=2, lr=0.0, init=str(tmp_path / "a.pb.gz"),
                              init_policy_scale=3.0, **common), log=logs.append)
    assert any("initialised from" in line for line in logs)
    assert any(line.startswith("step 0 (") and "validation policy" in line for line in logs)
    for x, y in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(again)):
        np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-5, atol=1e-6)
    # Without --init, seed 2 starts from its own random weights (what a run at lr 0 keeps).
    fresh = init_params(TrainConfig(run="", seed=2, **common).net, 2)
    assert not all(np.allclose(np.asarray(x), np.asarray(y)) for x, y in
                   zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(fresh)))


@pytest.mark.parametrize("bad", ["1.5", "-0.1", "often"])
def test_datagen_blunder_must_be_a_probability(bad, capsys):
    from nets.training import cli
    parser = argparse.ArgumentParser()
    cli._datagen_args(parser)
    assert parser.parse_args(["--blunder", "0.04"]).blunder == pytest.approx(0.04)
    with pytest.raises(SystemExit):
        parser.parse_args(["--blunder", bad])
    assert f"expected a probability in [0, 1], got '{bad}'" in capsys.readouterr().err


def test_learning_rate_warms_up_then_decays_as_one_argument_type():
    """Linear warm-up to lr, cosine down to final_lr_fraction of it; a Python float at every
    step, so that train_step (which takes it traced) compiles once a run, not once a phase."""
    cfg = TrainConfig(run="", data="", lr=1e-3, warmup=4, steps=20, final_lr_fraction=0.1)
    rates = [learning_rate(cfg, s) for s in range(cfg.steps + 1)]
    assert {type(r) for r in rates} == {float}
    assert rates[:4] == pytest.approx([2.5e-4, 5e-4, 7.5e-4, 1e-3])
    assert rates[4] == pytest.approx(1e-3) and rates[12] == pytest.approx(0.55e-3)
    assert rates[20] == pytest.approx(1e-4) and all(a >= b for a, b in zip(rates[3:], rates[4:]))
