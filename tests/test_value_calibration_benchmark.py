"""``benchmarks/diagnostics/value_calibration.py``: realised returns by hand, greedy play's
records."""

import sys
from pathlib import Path

import jax
import numpy as np
import pytest

from mz_jax import NetworkConfig, SearchConfig, TrainConfig
from mz_jax.run.agent import Agent
from mz_jax.training.build import build

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from diagnostics import value_calibration as calibration


def test_realised_returns_by_hand():
    # Episode 0 terminates at t = 2; episode 1 is truncated at t = 1 (bootstrap 10), and its row 2,
    # a new episode's, is cut by the end of the records (bootstrap 4).
    reward = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
    terminated = np.array([[False, False], [False, False], [True, False]])
    truncated = np.array([[False, False], [False, True], [False, True]])
    bootstrap = np.array([[0.0, 0.0], [0.0, 10.0], [0.0, 4.0]])
    returns = calibration.realised_returns(reward, terminated, truncated, bootstrap, discount=0.5)
    expected = np.array(
        [
            [1 + 0.5 + 0.25, 1 + 0.5 * (2 + 0.5 * 10)],
            [1 + 0.5, 2 + 0.5 * 10],
            [1, 3 + 0.5 * 4],
        ]
    )
    np.testing.assert_allclose(returns, expected)


def test_summarise_properties():
    returns = np.arange(8.0)
    exact = calibration.summarise(returns.copy(), returns)
    assert exact["corr"] == pytest.approx(1.0)
    assert exact["mean_abs_error"] == 0.0
    assert exact["lowest_g"] == pytest.approx(np.mean([0.0, 1.0]))  # the quarter at or below 1.75
    assert exact["highest_v"] == pytest.approx(np.mean([6.0, 7.0]))
    flat = calibration.summarise(np.full(8, 3.0), returns)
    assert np.isnan(flat["corr"])  # a constant value does not rank states at all
    assert flat["lowest_v"] == flat["highest_v"] == 3.0
    assert flat["mean_abs_error"] == pytest.approx(np.mean(np.abs(3.0 - returns)))


def test_play_records_one_episode_per_column_with_cartpole_returns():
    config = TrainConfig(
        env="gymnax:CartPole-v1",
        discount=0.9,
        network=NetworkConfig(hidden_sizes=(16,), latent_size=8),
        search=SearchConfig(num_simulations=4),
    )
    components = build(config)
    agent = Agent(config, components.init_params(jax.random.key(0)))
    play = calibration.make_play(agent, episodes=3, max_steps=60)
    records = play(agent.params, jax.random.key(1))
    alive = records["alive"]
    assert alive.shape == (60, 3)
    for column in range(3):
        length = int(alive[:, column].sum())
        # The alive rows are a prefix, and the episode ends on its last one, once.
        assert alive[:length, column].all() and not alive[length:, column].any()
        ends = (records["terminated"] | records["truncated"])[:length, column]
        assert ends[-1] and not ends[:-1].any()
        assert (records["reward"][:length, column] == 1.0).all()  # CartPole pays 1 a step
    returns = calibration.realised_returns(
        records["reward"],
        records["terminated"],
        records["truncated"],
        records["bootstrap"],
        discount=0.9,
    )
    # An untrained agent drops the pole within 60 steps: from k steps before the end, the return
    # is 1 + 0.9 + ... + 0.9^k.
    for column in range(3):
        length = int(alive[:, column].sum())
        assert records["terminated"][length - 1, column]
        steps_left = np.arange(length, 0, -1)
        np.testing.assert_allclose(
            returns[:length, column], (1 - 0.9**steps_left) / (1 - 0.9), rtol=1e-6
        )
