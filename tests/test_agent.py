"""The deployable Agent: restored from a tiny tic-tac-toe run, it plays legal moves only."""

import dataclasses
import json
import re
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import orbax.checkpoint as ocp
import pytest

from mz_jax import NetworkConfig, SearchConfig, TrainConfig
from mz_jax.cli.main import main
from mz_jax.config.overrides import config_from_dict
from mz_jax.run.agent import Agent
from mz_jax.run.loop import run_training
from mz_jax.run.resume import read_config

NUM_CELLS = 9
BATCH = 64


def tiny_tic_tac_toe() -> TrainConfig:
    return TrainConfig(
        env="pgx:tic_tac_toe",
        discount=1.0,
        td_steps=9,
        num_unroll_steps=2,
        num_envs=8,
        rollout_length=4,
        updates_per_iteration=1,
        batch_size=8,
        total_env_steps=128,  # 4 iterations; the replay can serve a 12-step window from the third
        replay_capacity=512,
        warmup_updates=0,
        eval_every_env_steps=0,  # one compiled program fewer; the tests evaluate the agent
        eval_max_steps=NUM_CELLS,
        log_every_seconds=1000.0,
        checkpoint_every_seconds=1000.0,
        search=SearchConfig(policy="gumbel", num_simulations=4),
        network=NetworkConfig(
            kind="mlp",
            hidden_sizes=(16,),
            latent_size=16,
        ),
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("agent") / "ttt"
    summary = run_training(tiny_tic_tac_toe(), workdir)
    assert summary["updates"] > 0, summary
    return workdir


@pytest.fixture(scope="module")
def agent(workdir):
    return Agent.restore(workdir)


def random_positions(key, batch):
    """Random [B, 3, 3, 2] boards and [B, 9] masks with at least one legal move (some exactly one)."""
    board_key, mask_key, single_key = jax.random.split(key, 3)
    observation = jax.random.bernoulli(board_key, 0.3, (batch, 3, 3, 2)).astype(jnp.float32)
    mask = np.array(jax.random.bernoulli(mask_key, 0.3, (batch, NUM_CELLS)))
    single = np.asarray(jax.random.randint(single_key, (batch,), 0, NUM_CELLS))
    # Rows 0..15 get exactly one legal move, the others at least one.
    mask[:16] = False
    mask[np.arange(batch), single] = True
    return observation, mask, single


def test_restore_rebuilds_the_run(agent, workdir):
    assert agent.config == tiny_tic_tac_toe()
    assert agent.env.name == "pgx:tic_tac_toe"
    assert agent.env.num_players == 2
    assert agent.search_config.two_player  # set from the environment, not the preset
    assert agent.search_config.num_simulations == 4
    # 4 iterations of 8 x 4 steps; the updates of the iterations whose replay was ready.
    assert agent.env_steps == 128
    assert 1 <= agent.updates <= 4
    hidden = jax.tree.leaves(agent.params)
    assert hidden and all(bool(jnp.all(jnp.isfinite(x))) for x in hidden)
    assert json.loads((workdir / "config.json").read_text())["env"] == "pgx:tic_tac_toe"


def test_act_never_plays_an_illegal_move(agent):
    observation, mask, single = random_positions(jax.random.key(1), BATCH)
    action = np.asarray(agent.act(jax.random.key(2), observation, mask))
    assert action.shape == (BATCH,)
    assert action.dtype == np.int32
    assert mask[np.arange(BATCH), action].all()
    np.testing.assert_array_equal(action[:16], single[:16])


def test_act_is_greedy_and_defaults_to_all_legal(agent):
    observation, mask, _ = random_positions(jax.random.key(3), BATCH)
    first = np.asarray(agent.act(jax.random.key(4), observation, mask))
    again = np.asarray(agent.act(jax.random.key(5), observation, mask.astype(np.int32)))
    np.testing.assert_array_equal(first, again)  # the key does not matter, nor the mask's dtype
    unmasked = np.asarray(agent.act(jax.random.key(6), observation))
    assert ((unmasked >= 0) & (unmasked < NUM_CELLS)).all()


def test_act_validates_shapes(agent):
    board = jnp.zeros((3, 3, 2))
    with pytest.raises(ValueError, match=r"observation\[None\]"):
        agent.act(jax.random.key(0), board)
    with pytest.raises(ValueError, match=r"observation must have shape \[B, \*\(3, 3, 2\)\]"):
        agent.act(jax.random.key(0), jnp.zeros((2, 9)))
    with pytest.raises(ValueError, match=r"legal_action_mask must have shape \[B, A\] = \(2, 9\)"):
        agent.act(jax.random.key(0), jnp.zeros((2, 3, 3, 2)), jnp.ones((2, 4), bool))
    mask = np.ones((3, NUM_CELLS), bool)
    mask[1] = False
    with pytest.raises(ValueError, match=r"rows \[1\] have no legal action"):
        agent.act(jax.random.key(0), jnp.zeros((3, 3, 3, 2)), mask)


def test_cli_eval_against_random_counts_wins_draws_losses(workdir, capsys):
    episodes = 8
    assert main(["eval", "--workdir", str(workdir), "--episodes", str(episodes)]) == 0
    out = capsys.readouterr().out
    # Tic-tac-toe ends within 9 moves, so every game has a result.
    assert f"{episodes} finished within {NUM_CELLS} steps" in out
    counts = {
        label: tuple(map(int, numbers))
        for label, *numbers in re.findall(
            r"^(total|moving first|moving second): wins (\d+), draws (\d+), losses (\d+)$",
            out,
            flags=re.MULTILINE,
        )
    }
    assert set(counts) == {"total", "moving first", "moving second"}
    assert sum(counts["total"]) == episodes
    assert sum(counts["moving first"]) == sum(counts["moving second"]) == episodes // 2
    by_seat = np.add(counts["moving first"], counts["moving second"])
    np.testing.assert_array_equal(by_seat, counts["total"])
    wins, _, losses = counts["total"]
    mean = float(re.search(r"return: mean (\S+),", out).group(1))
    assert mean == pytest.approx((wins - losses) / episodes, abs=1e-3)


def test_with_search_changes_the_search_and_nothing_else(agent, workdir, capsys):
    one = agent.with_search(num_simulations=1)
    assert one.search_config == dataclasses.replace(agent.search_config, num_simulations=1)
    assert agent.search_config.num_simulations == 4  # the agent it came from is unchanged
    assert one.params is agent.params and one.config == agent.config
    assert (one.updates, one.env_steps) == (agent.updates, agent.env_steps)
    # Gumbel MuZero with one simulation considers one action, the legal one of highest prior
    # logit (no Gumbel noise when greedy): the network's own argmax, computed here directly.
    observation, mask, _ = random_positions(jax.random.key(7), BATCH)
    output, _ = agent.network.initial_inference(agent.params, observation)
    expected = np.argmax(np.where(mask, np.asarray(output.policy_logits), -np.inf), axis=1)
    action = np.asarray(one.act(jax.random.key(8), observation, mask))
    np.testing.assert_array_equal(action, expected)
    with pytest.raises(ValueError, match="'num_simulation' not a field of SearchConfig"):
        agent.with_search(num_simulation=8)
    with pytest.raises(ValueError, match="num_simulations"):
        agent.with_search(num_simulations=0)
    # mz-jax eval --num-simulations searches with it.
    args = ["eval", "--workdir", str(workdir), "--episodes", "2", "--num-simulations", "1"]
    assert main(args) == 0
    assert "; 1 simulation a move" in capsys.readouterr().out


def test_evaluate_checks_its_arguments(agent):
    with pytest.raises(ValueError, match="num_episodes must be an integer >= 1; got 0"):
        agent.evaluate(jax.random.key(0), num_episodes=0)
    with pytest.raises(ValueError, match="max_steps must be an integer >= 1; got -1"):
        agent.evaluate(jax.random.key(0), num_episodes=2, max_steps=-1)


def test_restore_reads_only(workdir, tmp_path):
    # A save in progress by a concurrent training run must survive an evaluator's restore.
    copy = tmp_path / "run"
    shutil.copytree(workdir, copy)
    in_progress = copy / "checkpoints" / "999.orbax-checkpoint-tmp-1234"
    in_progress.mkdir()
    before = sorted(p.name for p in (copy / "checkpoints").iterdir())
    complete = [int(name) for name in before if name.isdigit()]
    agent = Agent.restore(copy)
    assert agent.checkpoint_step == max(complete)  # not the unfinished 999
    assert in_progress.is_dir()
    assert sorted(p.name for p in (copy / "checkpoints").iterdir()) == before


def test_restore_a_chosen_checkpoint(workdir):
    steps = sorted(int(p.name) for p in (workdir / "checkpoints").iterdir() if p.name.isdigit())
    assert len(steps) >= 2, steps  # the first iteration's and the last
    oldest, newest = Agent.restore(workdir, step=steps[0]), Agent.restore(workdir)
    assert (oldest.checkpoint_step, newest.checkpoint_step) == (steps[0], steps[-1])
    assert oldest.env_steps < newest.env_steps == 128
    # The parameters that checkpoint holds, read with orbax alone.
    saved = ocp.PyTreeCheckpointer().restore(workdir / "checkpoints" / str(steps[0]) / "state")
    restored = jax.tree_util.tree_flatten_with_path(oldest.params)[0]
    expected = jax.tree_util.tree_flatten_with_path(saved["train"]["params"])[0]
    assert [jax.tree_util.keystr(path) for path, _ in restored] == [
        jax.tree_util.keystr(path) for path, _ in expected
    ]
    for (_, got), (_, want) in zip(restored, expected, strict=True):
        np.testing.assert_array_equal(np.asarray(got), want)
    assert any(  # an update happened between the two
        not np.array_equal(np.asarray(a), np.asarray(b))
        for a, b in zip(jax.tree.leaves(oldest.params), jax.tree.leaves(newest.params), strict=True)
    )
    allowed = ", ".join(map(str, steps))
    for bad in (steps[-1] + 1, True):
        with pytest.raises(
            ValueError, match=f"step {bad!r} is not a checkpoint .*allowed one of {allowed}$"
        ):
            Agent.restore(workdir, step=bad)


def test_restore_without_checkpoint_is_a_clear_error(workdir, tmp_path):
    with pytest.raises(FileNotFoundError, match=r"config\.json"):
        Agent.restore(tmp_path / "nothing")
    (tmp_path / "fresh").mkdir()
    shutil.copy(workdir / "config.json", tmp_path / "fresh" / "config.json")
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        Agent.restore(tmp_path / "fresh")
    assert not (tmp_path / "fresh" / "checkpoints").exists()


def test_config_from_dict_round_trips_through_json():
    config = TrainConfig(
        env="pgx:tic_tac_toe",
        max_episode_steps=30,
        total_env_steps=None,
        priority_beta=(0.5, 0.9),
        temperature_schedule=((0.25, 2.0), (1.0, 0.5)),
        search=SearchConfig(policy="muzero", num_simulations=3, value_bounds=(-1.0, 1.0)),
        network=NetworkConfig(kind="resnet", hidden_sizes=(8, 4), channels=8),
    )
    as_json = json.loads(json.dumps(dataclasses.asdict(config)))
    assert isinstance(as_json["network"]["hidden_sizes"], list)
    restored = config_from_dict(as_json)
    assert restored == config
    assert restored.temperature_schedule == ((0.25, 2.0), (1.0, 0.5))
    assert isinstance(restored.search, SearchConfig)


def test_config_from_dict_defaults_and_errors():
    assert config_from_dict({"env": "gymnax:Catch-bsuite"}) == TrainConfig(
        env="gymnax:Catch-bsuite"
    )
    assert config_from_dict({"network": {"latent_size": 8}}).network == NetworkConfig(latent_size=8)
    with pytest.raises(ValueError, match=r"unknown config field\(s\) learning_rte"):
        config_from_dict({"learning_rte": 0.1})
    with pytest.raises(ValueError, match=r"search\.simulations"):
        config_from_dict({"search": {"simulations": 4}})
    with pytest.raises(ValueError, match="num_unroll_steps"):
        config_from_dict({"num_unroll_steps": 0})
    with pytest.raises(ValueError, match="'network'"):
        config_from_dict({"network": [1, 2]})


def test_read_config_of_the_run(workdir):
    assert read_config(workdir) == tiny_tic_tac_toe()
