"""Tests of the environment protocol and its gymnax and pgx adapters.

Expected values come from the games' rules written out here: a numpy CartPole (the classic Euler
integration of Barto, Sutton & Anderson), tic-tac-toe boards drawn by hand, and bsuite's DeepSea, whose
agent descends one row per step.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax.envs import EnvState, TimeStep, list_envs, make_env

BATCH = 4


def _rollout(env, key, actions):
    """Resets, then takes ``actions[T]``; returns the reset TimeStep and the T stepped ones."""
    reset_key, step_key = jax.random.split(key)
    state, first = env.reset(reset_key)

    def body(state, inputs):
        key, action = inputs
        state, timestep = env.step(key, state, action)
        return state, (timestep, state.episode_step)

    keys = jax.random.split(step_key, actions.shape[0])
    _, (timesteps, episode_steps) = jax.lax.scan(body, state, (keys, actions))
    return first, timesteps, episode_steps


def rollout(env, key, actions):
    return jax.jit(functools.partial(_rollout, env))(key, jnp.asarray(actions, jnp.int32))


def cartpole_reference_step(observation, action):
    """CartPole-v1 physics in float64 numpy, written from the classic equations."""
    gravity, mass_cart, mass_pole, half_length, force_mag, tau = 9.8, 1.0, 0.1, 0.5, 10.0, 0.02
    x, x_dot, theta, theta_dot = (float(v) for v in observation)
    force = force_mag if action == 1 else -force_mag
    total_mass = mass_cart + mass_pole
    temp = (force + mass_pole * half_length * theta_dot**2 * math.sin(theta)) / total_mass
    theta_acc = (gravity * math.sin(theta) - math.cos(theta) * temp) / (
        half_length * (4.0 / 3.0 - mass_pole * math.cos(theta) ** 2 / total_mass)
    )
    x_acc = temp - mass_pole * half_length * theta_acc * math.cos(theta) / total_mass
    return np.array(
        [x + tau * x_dot, x_dot + tau * x_acc, theta + tau * theta_dot, theta_dot + tau * theta_acc]
    )


def cartpole_fell(observation):
    x, _, theta, _ = observation
    return abs(x) > 2.4 or abs(theta) > 12 * 2 * math.pi / 360


# --------------------------------------------------------------------------------------------------
# Names and errors.


def test_list_envs_holds_the_expected_names():
    names = list_envs()
    for name in [
        "gymnax:CartPole-v1",
        "gymnax:Catch-bsuite",
        "gymnax:Breakout-MinAtar",
        "pgx:tic_tac_toe",
        "pgx:connect_four",
        "toy:gamble",
    ]:
        assert name in names
    # Continuous gymnax environments and games with more than two players are not supported.
    for name in ["gymnax:Pendulum-v1", "gymnax:MountainCarContinuous-v0", "pgx:sparrow_mahjong"]:
        assert name not in names
    assert all(name.startswith(("gymnax:", "pgx:", "toy:")) for name in names)
    assert len(names) == len(set(names))


@pytest.mark.parametrize(
    "name, close_match",
    [
        ("gymnax:Cartpole-v1", "gymnax:CartPole-v1"),
        ("CartPole-v1", "gymnax:CartPole-v1"),
        ("pgx:tic-tac-toe", "pgx:tic_tac_toe"),
        ("gymnax:tic_tac_toe", "pgx:tic_tac_toe"),
    ],
)
def test_unknown_name_suggests_a_close_match(name, close_match):
    with pytest.raises(ValueError, match="Unknown environment") as error:
        make_env(name)
    message = str(error.value)
    assert repr(name) in message
    # Close matches come first, ahead of the full list.
    assert message.index(close_match) < message.index("Available")


def test_continuous_gymnax_env_is_refused():
    with pytest.raises(ValueError, match="continuous") as error:
        make_env("gymnax:Pendulum-v1")
    assert "discrete" in str(error.value)


def test_more_than_two_player_pgx_game_is_refused():
    with pytest.raises(ValueError, match="3 players"):
        make_env("pgx:sparrow_mahjong")


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"max_episode_steps": 0}, "max_episode_steps"),
        ({"max_episode_steps": 2.5}, "max_episode_steps"),
        ({"no_such_knob": 1}, "no_such_knob"),
    ],
)
def test_bad_make_env_arguments_are_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        make_env("gymnax:CartPole-v1", **kwargs)


def test_pgx_takes_no_keyword_arguments():
    with pytest.raises(ValueError, match="sticky_action_prob"):
        make_env("pgx:tic_tac_toe", sticky_action_prob=0.0)


# --------------------------------------------------------------------------------------------------
# gymnax: CartPole.


@pytest.fixture(scope="module")
def cartpole():
    return make_env("gymnax:CartPole-v1")


def test_cartpole_attributes(cartpole):
    assert cartpole.name == "gymnax:CartPole-v1"
    assert cartpole.num_actions == 2
    assert cartpole.observation_shape == (4,)
    assert cartpole.num_players == 1
    assert cartpole.max_episode_steps == 500


def _check_timestep(timestep, batch_shape, observation_shape, num_actions):
    expected = TimeStep(
        observation=(batch_shape + observation_shape, jnp.float32),
        legal_action_mask=((*batch_shape, num_actions), jnp.bool_),
        player=(batch_shape, jnp.int32),
        reward=(batch_shape, jnp.float32),
        terminated=(batch_shape, jnp.bool_),
        truncated=(batch_shape, jnp.bool_),
        final_observation=(batch_shape + observation_shape, jnp.float32),
        final_player=(batch_shape, jnp.int32),
    )
    for field, value, (shape, dtype) in zip(TimeStep._fields, timestep, expected, strict=True):
        assert value.shape == shape, field
        assert value.dtype == dtype, field


def test_cartpole_shapes_and_dtypes_jitted_vmapped_and_plain(cartpole):
    keys = jax.random.split(jax.random.key(0), BATCH)
    state, timestep = jax.jit(jax.vmap(cartpole.reset))(keys)
    _check_timestep(timestep, (BATCH,), (4,), 2)
    assert isinstance(state, EnvState)
    np.testing.assert_array_equal(state.episode_step, np.zeros(BATCH))
    # The reset draws every component uniformly in [-0.05, 0.05].
    assert np.all(np.abs(timestep.observation) <= 0.05)
    np.testing.assert_array_equal(timestep.reward, np.zeros(BATCH))
    np.testing.assert_array_equal(timestep.final_observation, timestep.observation)
    assert not np.any(timestep.terminated | timestep.truncated)

    actions = jnp.array([0, 1, 0, 1], jnp.int32)
    new_state, stepped = jax.jit(jax.vmap(cartpole.step))(keys, state, actions)
    _check_timestep(stepped, (BATCH,), (4,), 2)
    np.testing.assert_array_equal(new_state.episode_step, np.ones(BATCH))
    np.testing.assert_array_equal(stepped.reward, np.ones(BATCH))
    for b in range(BATCH):
        expected = cartpole_reference_step(timestep.observation[b], int(actions[b]))
        np.testing.assert_allclose(stepped.observation[b], expected, atol=1e-6)

    # Un-jitted, one environment, a Python int action.
    plain_state, plain = cartpole.reset(keys[0])
    _check_timestep(plain, (), (4,), 2)
    np.testing.assert_allclose(plain.observation, timestep.observation[0], atol=1e-7)
    _, plain_stepped = cartpole.step(keys[0], plain_state, 0)
    _check_timestep(plain_stepped, (), (4,), 2)
    np.testing.assert_allclose(plain_stepped.observation, stepped.observation[0], atol=1e-6)


@pytest.mark.parametrize("action", [jnp.zeros(2, jnp.int32), jnp.float32(1.0)])
def test_step_refuses_a_non_scalar_or_non_integer_action(cartpole, action):
    state, _ = cartpole.reset(jax.random.key(0))
    with pytest.raises(ValueError, match="action"):
        cartpole.step(jax.random.key(1), state, action)


def test_cartpole_auto_reset_after_the_pole_falls(cartpole):
    num_steps = 40
    first, timesteps, episode_steps = rollout(cartpole, jax.random.key(3), np.ones(num_steps))
    done = np.asarray(timesteps.terminated | timesteps.truncated)
    assert done.any()
    end = int(np.argmax(done))
    # Pushing right every step tips the pole over long before 500 steps: a termination.
    assert timesteps.terminated[end] and not timesteps.truncated[end]
    assert not np.any(timesteps.truncated)
    # CartPole pays 1 for every transition, the falling one included.
    np.testing.assert_array_equal(timesteps.reward, np.ones(num_steps))

    # Follow the physics by hand up to the fall; the falling transition is in final_observation.
    observation = np.asarray(first.observation, np.float64)
    for t in range(end + 1):
        observation = cartpole_reference_step(observation, 1)
        np.testing.assert_allclose(timesteps.final_observation[t], observation, atol=1e-4)
        assert cartpole_fell(observation) == (t == end)
        if t < end:
            np.testing.assert_array_equal(timesteps.observation[t], timesteps.final_observation[t])
    # The observation after the fall starts a fresh episode.
    assert not np.allclose(timesteps.observation[end], timesteps.final_observation[end])
    assert np.all(np.abs(timesteps.observation[end]) <= 0.05)
    np.testing.assert_array_equal(episode_steps[: end + 1], [*range(1, end + 1), 0])
    # And the next step continues from that fresh start.
    np.testing.assert_allclose(
        timesteps.observation[end + 1],
        cartpole_reference_step(np.asarray(timesteps.observation[end], np.float64), 1),
        atol=1e-6,
    )


def test_time_limit_truncates_at_exactly_n_steps():
    env = make_env("gymnax:CartPole-v1", max_episode_steps=5)
    assert env.max_episode_steps == 5
    # Alternating pushes keep the pole up well past 5 steps, so only the time limit ends episodes.
    actions = np.arange(12) % 2
    first, timesteps, episode_steps = rollout(env, jax.random.key(4), actions)
    expected_truncated = np.zeros(12, bool)
    expected_truncated[[4, 9]] = True
    np.testing.assert_array_equal(timesteps.truncated, expected_truncated)
    np.testing.assert_array_equal(timesteps.terminated, np.zeros(12, bool))
    np.testing.assert_array_equal(episode_steps, [1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2])
    np.testing.assert_array_equal(timesteps.reward, np.ones(12))
    # final_observation holds the state the time limit cut off, for bootstrapping.
    observation = np.asarray(first.observation, np.float64)
    for t in range(5):
        observation = cartpole_reference_step(observation, actions[t])
    np.testing.assert_allclose(timesteps.final_observation[4], observation, atol=1e-5)
    assert np.all(np.abs(timesteps.observation[4]) <= 0.05)
    assert not np.allclose(timesteps.observation[4], timesteps.final_observation[4])


def test_termination_at_the_time_limit_is_not_a_truncation():
    # DeepSea-bsuite: the agent descends one row per step and the episode terminates on leaving the
    # bottom row, after exactly `size` steps, which is also gymnax's time limit for it.
    env = make_env("gymnax:DeepSea-bsuite", size=4)
    assert env.max_episode_steps == 4
    assert env.observation_shape == (4, 4)
    _, timesteps, _ = rollout(env, jax.random.key(5), np.zeros(8))
    np.testing.assert_array_equal(timesteps.terminated, [0, 0, 0, 1, 0, 0, 0, 1])
    np.testing.assert_array_equal(timesteps.truncated, np.zeros(8, bool))
    # The agent's one-hot position is on row t+1 after step t; after the reset, back on row 0.
    rows = np.asarray(timesteps.observation).sum(axis=2).argmax(axis=1)
    np.testing.assert_array_equal(rows, [1, 2, 3, 0, 1, 2, 3, 0])
    # Leaving the grid shows an all-zero board, kept as the final observation.
    np.testing.assert_array_equal(timesteps.final_observation[3], np.zeros((4, 4)))


def test_frozen_lake_observes_its_tile_index_one_hot():
    # A Discrete observation space: the tile index 0..15 of the 4 x 4 map, observed one-hot. The map
    # (Gymnasium's): SFFF / FHFH / FFFH / HFFG; actions 0 left, 1 down, 2 right, 3 up, and not
    # slippery, so the path right, right, down, down, down, right walks 0 -> 1 -> 2 -> 6 -> 10 -> 14
    # -> 15, the goal (reward 1, terminated); the reset puts the agent back on 0, then down -> 4.
    env = make_env("gymnax:FrozenLake-misc", is_slippery=False)
    assert env.observation_shape == (16,)
    first, timesteps, _ = rollout(env, jax.random.key(0), [2, 2, 1, 1, 1, 2, 1])
    one_hot = np.eye(16, dtype=np.float32)
    np.testing.assert_array_equal(first.observation, one_hot[0])
    np.testing.assert_array_equal(timesteps.observation, one_hot[[1, 2, 6, 10, 14, 0, 4]])
    np.testing.assert_array_equal(timesteps.final_observation[5], one_hot[15])
    np.testing.assert_array_equal(timesteps.reward, [0, 0, 0, 0, 0, 1, 0])
    np.testing.assert_array_equal(timesteps.terminated, [0, 0, 0, 0, 0, 1, 0])


# --------------------------------------------------------------------------------------------------
# pgx: tic-tac-toe.


@pytest.fixture(scope="module")
def tic_tac_toe():
    env = make_env("pgx:tic_tac_toe")
    return env, jax.jit(env.reset), jax.jit(env.step)


def board_planes(own, other):
    """The [3, 3, 2] observation of the player who owns the cells ``own``; plane 1: ``other``'s."""
    planes = np.zeros((9, 2), np.float32)
    planes[list(own), 0] = 1.0
    planes[list(other), 1] = 1.0
    return planes.reshape(3, 3, 2)


def test_tic_tac_toe_attributes(tic_tac_toe):
    env, _, _ = tic_tac_toe
    assert env.name == "pgx:tic_tac_toe"
    assert env.num_actions == 9
    assert env.observation_shape == (3, 3, 2)
    assert env.num_players == 2
    assert env.max_episode_steps is None


@pytest.mark.parametrize(
    "moves, winner_index, seed",
    [
        ([0, 3, 1, 4, 2], 0, 0),  # the first player completes the top row
        ([0, 3, 1, 4, 8, 5], 1, 1),  # the second player completes the middle row
        ([0, 1, 2, 4, 3, 5, 7, 6, 8], None, 2),  # X O X / X O O / O X X: a draw
    ],
)
def test_tic_tac_toe_hand_played_game(tic_tac_toe, moves, winner_index, seed):
    _, reset, step = tic_tac_toe
    key = jax.random.key(seed)
    state, timestep = reset(key)
    first = int(timestep.player)
    assert first in (0, 1)
    players = [first, 1 - first]
    np.testing.assert_array_equal(timestep.observation, np.zeros((3, 3, 2)))
    np.testing.assert_array_equal(timestep.legal_action_mask, np.ones(9, bool))

    cells = ([], [])  # cells held by the first and the second mover
    for t, move in enumerate(moves):
        mover = t % 2
        assert int(timestep.player) == players[mover]
        assert timestep.legal_action_mask[move]
        key, subkey = jax.random.split(key)
        state, timestep = step(subkey, state, jnp.int32(move))
        cells[mover].append(move)
        last = t == len(moves) - 1
        # The next player to move sees its own cells in plane 0.
        next_mover = 1 - mover
        expected_final = board_planes(cells[next_mover], cells[mover])
        np.testing.assert_array_equal(timestep.final_observation, expected_final)
        assert int(timestep.final_player) == players[next_mover]
        assert bool(timestep.terminated) == last
        assert not timestep.truncated
        if last:
            expected_reward = 0.0 if winner_index is None else 1.0
            assert winner_index in (None, mover)
        else:
            expected_reward = 0.0
            occupied = set(cells[0]) | set(cells[1])
            np.testing.assert_array_equal(
                timestep.legal_action_mask, [cell not in occupied for cell in range(9)]
            )
            np.testing.assert_array_equal(timestep.observation, expected_final)
            assert int(timestep.player) == players[next_mover]
        assert float(timestep.reward) == expected_reward

    # The game ended: an automatic reset gives an empty board, all 9 cells legal, a fresh episode.
    np.testing.assert_array_equal(timestep.observation, np.zeros((3, 3, 2)))
    np.testing.assert_array_equal(timestep.legal_action_mask, np.ones(9, bool))
    assert int(timestep.player) in (0, 1)
    assert int(state.episode_step) == 0


def test_pgx_losing_move_is_rewarded_from_the_movers_perspective(tic_tac_toe):
    # An illegal move (an occupied cell) loses at once under pgx's rules: -1 to the one who made it.
    _, reset, step = tic_tac_toe
    state, timestep = reset(jax.random.key(7))
    state, timestep = step(jax.random.key(8), state, jnp.int32(4))
    state, timestep = step(jax.random.key(9), state, jnp.int32(4))
    assert float(timestep.reward) == -1.0
    assert timestep.terminated
    np.testing.assert_array_equal(timestep.legal_action_mask, np.ones(9, bool))


def test_pgx_time_limit_truncates():
    env = make_env("pgx:tic_tac_toe", max_episode_steps=2)
    assert env.max_episode_steps == 2
    first, timesteps, episode_steps = rollout(env, jax.random.key(6), np.array([4, 0, 8]))
    np.testing.assert_array_equal(timesteps.truncated, [False, True, False])
    np.testing.assert_array_equal(timesteps.terminated, [False, False, False])
    np.testing.assert_array_equal(episode_steps, [1, 0, 1])
    # The cut-off position is kept from the view of the player to move after two moves, the first
    # mover; the stream itself starts again from an empty board.
    np.testing.assert_array_equal(timesteps.final_observation[1], board_planes([4], [0]))
    assert int(timesteps.final_player[1]) == int(first.player)
    np.testing.assert_array_equal(timesteps.observation[1], np.zeros((3, 3, 2)))
    np.testing.assert_array_equal(timesteps.final_observation[2].sum(), 1.0)
