"""Action repeat (frame skip): ``mz_jax.envs.repeat_action`` and ``TrainConfig.action_repeat``."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax import TrainConfig
from mz_jax.envs import Env, EnvState, TimeStep, make_env, repeat_action
from mz_jax.envs.base import restart
from mz_jax.training.build import make_run_env

EPISODE = 7  # the counter below terminates after this many steps


def _counter(num_players: int = 1) -> Env:
    """Observation ``[t]``; each step pays ``10 * action + t`` (t the step's index in its episode)
    and terminates after EPISODE steps. Action 1 is legal only at even t; action 0 always."""

    def timestep_at(t, reward, terminated, final_t):
        mask = jnp.array([True, t % 2 == 0])
        observation = jnp.asarray([t], jnp.float32)
        return TimeStep(
            observation=observation,
            legal_action_mask=mask,
            player=jnp.int32(0),
            reward=jnp.float32(reward),
            terminated=terminated,
            truncated=jnp.bool_(False),
            final_observation=jnp.asarray([final_t], jnp.float32),
            final_player=jnp.int32(0),
        )

    def reset(key):
        return EnvState(jnp.int32(0), jnp.int32(0)), restart(
            jnp.zeros(1, jnp.float32), jnp.array([True, True]), jnp.int32(0)
        )

    def step(key, state, action):
        t = state.backend
        reward = 10 * action + t
        terminated = t + 1 >= EPISODE
        next_t = jnp.where(terminated, 0, t + 1)
        return EnvState(next_t, next_t), timestep_at(next_t, reward, terminated, t + 1)

    return Env(
        "custom:counter", 2, (1,), num_players, EPISODE, reward_bound=30.0, reset=reset, step=step
    )


def _play(env: Env, actions):
    """(observation, reward, terminated, final observation) after each of ``actions``."""
    state, _ = env.reset(jax.random.key(0))
    step = jax.jit(env.step)
    out = []
    for i, action in enumerate(actions):
        state, ts = step(jax.random.key(i), state, jnp.int32(action))
        out.append(
            (
                float(ts.observation[0]),
                float(ts.reward),
                bool(ts.terminated),
                float(ts.final_observation[0]),
            )
        )
    return out


def test_rewards_of_the_repeated_steps_are_summed_and_an_episode_end_stops_the_repeat():
    env = repeat_action(_counter(), 3)
    assert env.max_episode_steps == 3  # ceil(7 / 3) decisions
    assert env.reward_bound == 90.0
    # Action 0 throughout: steps t = 0..6 pay t. Decisions cover t 0-2, 3-5 and 6 (the end), then
    # the next episode's 0-2.
    assert _play(env, [0, 0, 0, 0]) == [
        (3.0, 0 + 1 + 2, False, 3.0),
        (6.0, 3 + 4 + 5, False, 6.0),
        (0.0, 6, True, 7.0),  # one step, ending the episode: the observation is the new episode's
        (3.0, 0 + 1 + 2, False, 3.0),
    ]


def test_a_repeat_stops_where_its_action_becomes_illegal():
    # Action 1 at t = 0 pays 10 + 0 and reaches t = 1, where action 1 is illegal: one step only.
    # Then action 0 runs t = 1, 2, 3 (1 + 2 + 3), and action 1 at t = 4 is again one step (14).
    assert _play(repeat_action(_counter(), 3), [1, 0, 1]) == [
        (1.0, 10.0, False, 1.0),
        (4.0, 6.0, False, 4.0),
        (5.0, 14.0, False, 5.0),
    ]


def test_one_repeat_is_the_environment_itself_and_bad_repeats_are_refused():
    env = _counter()
    assert repeat_action(env, 1) is env
    for bad in (0, -2, 1.5, True, "2"):
        with pytest.raises(ValueError, match=r"repeats must be an integer >= 1; got"):
            repeat_action(env, bad)
    with pytest.raises(ValueError, match="needs a single-player environment"):
        repeat_action(_counter(num_players=2), 2)


def test_cartpole_with_repeats_is_cartpole_stepped_that_many_times():
    base = make_env("gymnax:CartPole-v1")
    env = repeat_action(base, 4)
    assert env.max_episode_steps == 125 and env.reward_bound == 4.0
    state, _ = env.reset(jax.random.key(1))
    base_state = state
    for decision, action in enumerate([1, 0, 0, 1]):
        key = jax.random.key(100 + decision)
        state, ts = env.step(key, state, jnp.int32(action))
        reward = 0.0
        for sub_key in jax.random.split(key, 4):
            base_state, base_ts = base.step(sub_key, base_state, jnp.int32(action))
            reward += float(base_ts.reward)
        np.testing.assert_allclose(ts.observation, base_ts.observation, atol=1e-5)
        assert float(ts.reward) == reward == 4.0  # +1 a step, the pole still up


def test_config_counts_environment_steps_and_refuses_two_player_games():
    config = TrainConfig(num_envs=8, rollout_length=2, action_repeat=4, eval_max_steps=201)
    assert config.env_steps_per_iteration == 64
    assert config.eval_max_decisions == 51
    with pytest.raises(ValueError, match=r"'action_repeat' = 0 is invalid"):
        TrainConfig(action_repeat=0)
    with pytest.raises(ValueError, match=r"'action_repeat' = 2 is invalid for pgx:tic_tac_toe"):
        make_run_env(TrainConfig(env="pgx:tic_tac_toe", action_repeat=2))
    assert make_run_env(TrainConfig(action_repeat=2)).max_episode_steps == 250
