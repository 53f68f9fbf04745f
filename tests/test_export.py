"""``mz-jax export``: one seed of a multi-seed run as a small directory that restores to the same
agent (the same parameters and counters, the same greedy games) without the run's replay."""

import json

import jax
import numpy as np
import pytest
from test_agent import tiny_tic_tac_toe

from mz_jax.cli.main import main
from mz_jax.config.overrides import override
from mz_jax.run.agent import Agent, restore_run_state
from mz_jax.run.checkpoint import state_nbytes
from mz_jax.run.export import EXPORTED_FROM_KEY, directory_bytes, export_agent
from mz_jax.run.loop import run_training

NUM_SEEDS = 2


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    # A replay far larger than the export's, so that leaving it out shows in the bytes.
    config = override(tiny_tic_tac_toe(), {"num_seeds": NUM_SEEDS, "replay_capacity": 8_192})
    workdir = tmp_path_factory.mktemp("export") / "run"
    summary = run_training(config, workdir)
    assert summary["updates"] > 0, summary
    return workdir


@pytest.fixture(scope="module")
def exported(run, tmp_path_factory):
    out = tmp_path_factory.mktemp("exported") / "agent"
    assert main(["export", "--workdir", str(run), "--out", str(out), "--seed-index", "1"]) == 0
    return out


def test_export_restores_the_seed_it_names(run, exported):
    whole = restore_run_state(run)
    agent = Agent.restore(exported)
    # The second seed's parameters, not the first's (the two seeds' parameters differ).
    for name, index in (("second", 1), ("first", 0)):
        expected = jax.tree.map(lambda x, i=index: np.asarray(x[i]), whole.state.train.params)
        leaves = jax.tree.leaves(
            jax.tree.map(lambda a, b: np.array_equal(np.asarray(a), b), agent.params, expected)
        )
        assert all(leaves) == (name == "second"), name
    assert agent.config.seed == whole.config.seed + 1
    assert agent.config.num_seeds == 1
    assert agent.env_steps == whole.meta["env_steps"]
    assert agent.updates == whole.meta["updates"]
    assert agent.checkpoint_step == whole.step


def test_exported_agent_plays_as_the_run_did(run, exported):
    original = Agent.restore(run, seed_index=1)
    copy = Agent.restore(exported)
    key = jax.random.key(7)
    games = [
        jax.device_get(a.evaluate(key, num_episodes=8, max_steps=9, opponent="random"))
        for a in (original, copy)
    ]
    np.testing.assert_array_equal(games[0].episode_return, games[1].episode_return)
    np.testing.assert_array_equal(games[0].episode_length, games[1].episode_length)


def test_export_leaves_the_replay_behind(run, exported):
    # In memory (the files are compressed, and an unfilled replay compresses well): one seed of the
    # run holds 8,192 transitions, the export 12.
    one_seed = state_nbytes(restore_run_state(run).state) / NUM_SEEDS
    assert state_nbytes(restore_run_state(exported).state) < one_seed / 20
    assert 0 < directory_bytes(exported) < 2**20
    config = json.loads((exported / "config.json").read_text())
    # One environment per device, one sequence (2 + 9 + 1 steps) per environment.
    assert config["num_envs"] == jax.device_count()
    assert config["replay_capacity"] == jax.device_count() * 12
    meta_source = Agent.restore(exported)  # meta travels: where the agent came from
    assert meta_source.checkpoint_step == restore_run_state(run).step


def test_export_meta_names_its_source(run, exported):
    restored = restore_run_state(exported)
    source = restored.meta[EXPORTED_FROM_KEY]
    assert source["seed_index"] == 1
    assert source["checkpoint"] == restore_run_state(run).step
    assert source["workdir"] == str(run.absolute())


def test_eval_reads_the_export(run, exported, capsys):
    assert main(["eval", "--workdir", str(exported), "--episodes", "4"]) == 0
    whole = restore_run_state(run)
    assert (
        f"checkpoint {whole.step} ({whole.meta['updates']:,} updates, "
        f"{whole.meta['env_steps']:,} env steps): 4 greedy episodes against a random player"
    ) in capsys.readouterr().out


def test_export_refuses_bad_input(run, exported, tmp_path, capsys):
    # A destination with files in it is never overwritten.
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--workdir", str(run), "--out", str(exported)])
    assert exit_info.value.code == 2
    assert "is not an empty directory" in capsys.readouterr().err
    # A seed the run does not hold; nothing is left behind.
    out = tmp_path / "bad_seed"
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--workdir", str(run), "--out", str(out), "--seed-index", "2"])
    assert exit_info.value.code == 2
    assert "allowed an integer in [0, 1]" in capsys.readouterr().err
    assert not out.exists()
    # A directory that is not a run.
    with pytest.raises(SystemExit) as exit_info:
        main(["export", "--workdir", str(tmp_path / "none"), "--out", str(tmp_path / "x")])
    assert exit_info.value.code == 2
    with pytest.raises(ValueError, match=r"index -1 is invalid"):
        export_agent(run, tmp_path / "y", seed_index=-1)
