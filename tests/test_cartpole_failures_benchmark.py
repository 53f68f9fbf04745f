"""``benchmarks/diagnostics/cartpole_failures.py``: which limit ends a CartPole step, replay rings
and greedy records read by hand."""

import sys
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import pytest

from mz_jax import NetworkConfig, SearchConfig, TrainConfig
from mz_jax.run.agent import Agent
from mz_jax.training.build import build

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from diagnostics import cartpole_failures as failures
from diagnostics import value_calibration as calibration


def test_end_causes_by_hand():
    # gymnax moves the position and the angle by 0.02 s times their velocities, then checks
    # |x| > 2.4 and |theta| > 12 degrees (0.20944 rad).
    observation = np.array(
        [
            [2.39, 1.0, 0.0, 0.0],  # x -> 2.41: the edge
            [2.39, 0.4, 0.0, 0.0],  # x -> 2.398: inside
            [0.0, 0.0, 0.2, 0.5],  # theta -> 0.21: the angle
            [0.0, 0.0, 0.2, 0.4],  # theta -> 0.208: inside
            [-2.39, -1.0, -0.2, -1.0],  # both
        ]
    )
    edge, angle = failures.end_causes(observation)
    np.testing.assert_array_equal(edge, [True, False, False, False, True])
    np.testing.assert_array_equal(angle, [False, False, True, False, True])


def test_oldest_first_unrolls_the_ring():
    values = np.arange(5)
    np.testing.assert_array_equal(failures.oldest_first(values, 3, 3), [0, 1, 2])  # not wrapped
    np.testing.assert_array_equal(failures.oldest_first(values, 2, 5), [2, 3, 4, 0, 1])


def test_replay_ends_on_a_wrapped_ring():
    # A ring of 4 rows x 2 streams after 6 rows were written: rows 2..5 sit in slots 2, 3, 0, 1.
    terminated = np.zeros((4, 2), bool)
    observation = np.zeros((4, 2, 4))
    terminated[3, 1], observation[3, 1] = True, [-2.395, -0.5, 0.0, 0.0]  # row 3: the edge
    terminated[1, 0], observation[1, 0] = True, [0.0, 0.0, -0.2, -1.0]  # row 5: the angle
    observation[0, 0] = [2.45, 1.0, 0.0, 0.0]  # past the edge, yet not an end: not counted
    replay = SimpleNamespace(
        data=SimpleNamespace(terminated=terminated, observation=observation),
        num_written=4,
        write_index=2,
    )
    ends = failures.replay_ends(replay, rows_written=6, env_steps_per_row=2)
    # Row 3 of both streams is complete after (3 + 1) x 2 environment steps.
    assert ends == {"ended": 2, "edge": 1, "angle": 1, "first_edge": 8}
    terminated[3, 1] = False
    assert failures.replay_ends(replay, rows_written=6, env_steps_per_row=2)["first_edge"] is None


def test_play_ends_by_hand():
    # Three episodes of at most 4 steps: one ends at the edge on row 2, one by the angle on row 1,
    # one runs to the limit.
    alive = np.array([[1, 1, 1], [1, 1, 1], [1, 0, 1], [0, 0, 1]], bool)
    terminated = np.zeros((4, 3), bool)
    terminated[2, 0] = terminated[1, 1] = True
    observation = np.zeros((4, 3, 4))
    observation[2, 0] = [2.39, 1.0, 0.0, 0.0]
    observation[1, 1] = [0.0, 0.0, 0.2, 0.5]
    value = np.full((4, 3), 50.0)
    value[2, 0] = 5.0
    records = {"alive": alive, "terminated": terminated, "observation": observation, "value": value}
    ends = failures.play_ends(records)
    assert ends == {
        "mean_length": pytest.approx((3 + 2 + 4) / 3),
        "edge": 1,
        "angle": 1,
        "limit": 1,
        "value_before_edge": 5.0,
    }
    terminated[2, 0] = False
    assert failures.play_ends(records)["value_before_edge"] is None


def test_an_untrained_agent_drops_the_pole():
    config = TrainConfig(
        env="gymnax:CartPole-v1",
        network=NetworkConfig(hidden_sizes=(16,), latent_size=8),
        search=SearchConfig(num_simulations=4),
    )
    agent = Agent(config, build(config).init_params(jax.random.key(0)))
    play = calibration.make_play(agent, episodes=3, max_steps=60)
    records = play(agent.params, jax.random.key(1))
    # The pole falls within a second of steady pushing, long before the cart covers 2.4 m.
    ends = failures.play_ends(records)
    assert (ends["edge"], ends["angle"], ends["limit"]) == (0, 3, 0)
    assert ends["value_before_edge"] is None
    last = records["alive"].sum(axis=0) - 1
    assert (np.abs(records["observation"][last, range(3), 2]) > 0.15).all()  # tilted at the end
