"""Several seeds as one program: run i of a ``num_seeds = S`` run is the plain run of seed ``seed + i``."""

import jax
import numpy as np
import pytest
from _tiny import CARTPOLE, NUM_SEEDS

from mz_jax.run import loop as run
from mz_jax.run.agent import Agent, restore_run_state
from mz_jax.run.records import read_metrics
from mz_jax.suite.runner import SuiteEntry, entry_config
from mz_jax.training.train import make_train

# Seeds and data parallelism together: every device.
CONFIG = entry_config(SuiteEntry("gymnax:CartPole-v1", overrides=CARTPOLE), num_seeds=1, seed=3)
CONFIG = CONFIG.replace(log_every_seconds=0.0, checkpoint_every_seconds=1e9)
ITERATIONS = 4  # 64 env steps, the run's total
TOLERANCE = 1e-5


def _max_difference(a, b) -> float:
    differences = jax.tree.map(
        lambda x, y: float(np.max(np.abs(np.asarray(x, np.float64) - np.asarray(y, np.float64)))),
        a,
        b,
    )
    return max(jax.tree.leaves(differences))


def test_each_run_of_a_vmapped_run_is_the_run_of_its_seed():
    num_seeds = NUM_SEEDS
    vmapped = make_train(CONFIG.replace(num_seeds=num_seeds))
    state = vmapped.init(CONFIG.seed)
    assert state.iteration.shape == (num_seeds,)
    all_metrics = []
    for _ in range(ITERATIONS):
        state, metrics = vmapped.step(state)
        all_metrics.append(jax.device_get(metrics))
    state = jax.device_get(state)
    assert all_metrics[-1]["loss"]["total"].shape == (1, num_seeds)  # [iterations, seeds]

    single = make_train(CONFIG)
    final_params = []
    for i in range(num_seeds):
        plain = single.init(CONFIG.seed + i)
        for iteration in range(ITERATIONS):
            plain, metrics = single.step(plain)
            # The same updates, losses and episodes, iteration by iteration.
            assert int(metrics["optim"]["updates"][0]) == int(
                all_metrics[iteration]["optim"]["updates"][0, i]
            )
            assert float(metrics["actor"]["episodes"][0]) == float(
                all_metrics[iteration]["actor"]["episodes"][0, i]
            )
            np.testing.assert_allclose(
                float(metrics["loss"]["total"][0]),
                float(all_metrics[iteration]["loss"]["total"][0, i]),
                rtol=1e-5,
                atol=1e-6,
            )
        assert int(plain.train.step) > 0  # updates happened, so parameters were trained
        run_i = jax.tree.map(lambda x, i=i: x[i], state)
        plain = jax.device_get(plain)
        assert _max_difference(plain.train.params, run_i.train.params) < TOLERANCE
        assert _max_difference(plain.replay.data, run_i.replay.data) < TOLERANCE
        np.testing.assert_array_equal(plain.actor.episode_length, run_i.actor.episode_length)
        final_params.append(plain.train.params)
    # The seeds really differ (a vmap that shared one seed would pass the checks above for i=0 only,
    # but this makes the point explicit).
    assert _max_difference(final_params[0], final_params[1]) > 1e-3

    # Evaluation: parameters and keys [S] in, episodes [S, E] out, seed i as a plain evaluation.
    keys = jax.random.split(jax.random.key(7), num_seeds)
    result = jax.device_get(vmapped.evaluate(state.train.params, keys))
    assert result.episode_return.shape == (num_seeds, CONFIG.eval_episodes)
    for i in range(num_seeds):
        alone = jax.device_get(single.evaluate(final_params[i], keys[i]))
        np.testing.assert_allclose(result.episode_return[i], alone.episode_return, atol=1e-4)


def test_multi_seed_run_logs_every_seed_and_restores_each(tmp_path):
    config = CONFIG.replace(num_seeds=NUM_SEEDS)
    seeds = [3, 4, 5]
    summary = run.run_training(config, tmp_path / "seeds")
    assert len(summary["eval_returns"]) == NUM_SEEDS
    assert summary["eval_return"] == pytest.approx(np.mean(summary["eval_returns"]))
    records = read_metrics(tmp_path / "seeds")
    assert {r["seed"] for r in records} == set(seeds)
    evaluations = {
        seed: [r["env_steps"] for r in records if r["seed"] == seed and "eval/episode_return" in r]
        for seed in seeds
    }
    for seed in seeds:
        assert evaluations[seed] == [32, 64]  # no second evaluation at the end
    last = {
        r["seed"]: r["eval/episode_return"]
        for r in records
        if "eval/episode_return" in r and r["env_steps"] == 64
    }
    assert [last[seed] for seed in seeds] == summary["eval_returns"]

    # The run of seed 4 alone: the same parameters as run 1 of the three-seed run.
    run.run_training(config.replace(seed=4, num_seeds=1), tmp_path / "alone")
    agent = Agent.restore(tmp_path / "seeds", seed_index=1)
    alone = Agent.restore(tmp_path / "alone")
    assert agent.config.seed == 4 and agent.config.num_seeds == 1
    assert agent.env_steps == alone.env_steps == 64
    assert _max_difference(agent.params, alone.params) < TOLERANCE
    # What run 1 collected is what seed 4 alone collected (its replay, as a checkpoint holds it).
    restored, restored_alone = (restore_run_state(tmp_path / d) for d in ("seeds", "alone"))
    collected = restored.seed_state(1).replay
    collected_alone = restored_alone.seed_state(0).replay
    assert int(collected.num_written) == int(collected_alone.num_written) > 0
    assert _max_difference(collected.data, collected_alone.data) < TOLERANCE
    alone_records = [r for r in read_metrics(tmp_path / "alone") if "eval/episode_return" in r]
    assert alone_records[-1]["eval/episode_return"] == pytest.approx(last[4], abs=1e-3)

    with pytest.raises(ValueError, match=r"seed_index 3 is invalid.*\[0, 2\]"):
        Agent.restore(tmp_path / "seeds", seed_index=3)
    # Indexing a leaf past its end gives the last seed's values; a restored run refuses instead.
    for pick in (restored.agent, restored.seed_state):
        with pytest.raises(ValueError, match=r"index 3 is invalid.*3 run\(s\).*\[0, 2\]"):
            pick(3)
    for pick in (restored_alone.agent, restored_alone.seed_state):
        with pytest.raises(ValueError, match=r"index 1 is invalid.*1 run\(s\).*\[0, 0\]"):
            pick(1)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"num_seeds": 0}, r"'num_seeds' = 0 is invalid: allowed an integer in \[1, "),
        (
            {"seed": 2**31 - 2, "num_seeds": 3},
            r"'num_seeds' = 3 is invalid: allowed an integer in \[1, 2\]",
        ),
    ],
)
def test_num_seeds_is_validated(changes, message):
    with pytest.raises(ValueError, match=message):
        CONFIG.replace(**changes)
