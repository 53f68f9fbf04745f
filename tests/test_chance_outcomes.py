"""The chance outcomes an environment names (``Env.chance_outcome``), checked against pgx itself:
pgx:2048's outcome is the new tile's cell and value, so the board after pgx's own slide with that
tile added must be the next board pgx reports; pgx:backgammon's is the roll that starts the next
turn, so it must name the dice pgx's state holds whenever the player to move changed."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax.envs import make_env
from mz_jax.envs.pgx_adapter import _slide_row_left


@pytest.mark.parametrize(
    "row, slid",
    [
        ([1, 1, 1, 1], [2, 2, 0, 0]),  # 2 2 2 2 -> 4 4: each tile merges once
        ([2, 0, 2, 3], [3, 3, 0, 0]),  # 4 . 4 8 -> 8 8: the new 8 does not merge again
        ([0, 0, 0, 1], [1, 0, 0, 0]),
        ([3, 3, 3, 0], [4, 3, 0, 0]),  # the leftmost pair merges first
        ([1, 2, 1, 2], [1, 2, 1, 2]),
        ([0, 0, 0, 0], [0, 0, 0, 0]),
    ],
)
def test_a_row_slides_and_merges_as_the_game_does(row, slid):
    np.testing.assert_array_equal(_slide_row_left(jnp.array(row)), slid)


def test_2048_outcome_is_the_new_tile_on_pgx_boards():
    from pgx.play2048 import _slide_and_merge  # pgx's own slide, the reference

    env = make_env("pgx:2048")
    assert env.num_chance_outcomes == 32
    outcome = jax.jit(env.chance_outcome)
    step = jax.jit(env.step)
    rng = np.random.default_rng(0)
    key = jax.random.key(0)
    state, timestep = env.reset(key)
    fours, moves = 0, 200
    for _ in range(moves):
        key, step_key = jax.random.split(key)
        action = int(rng.choice(np.flatnonzero(np.asarray(timestep.legal_action_mask))))
        next_state, next_timestep = step(step_key, state, jnp.int32(action))
        label = int(
            outcome(timestep.observation, jnp.int32(action), next_timestep.final_observation)
        )
        assert 0 <= label < 32
        board = state.backend._board.reshape(4, 4)
        slid, _ = jax.vmap(_slide_and_merge)(jnp.rot90(board, action))
        expected = np.asarray(jnp.rot90(slid, -action)).reshape(-1).copy()
        cell, four = divmod(label, 2)
        assert expected[cell] == 0  # the tile lands on a cell the slide left empty
        expected[cell] = 2 if four else 1  # exponents: 1 is a 2, 2 is a 4
        reached = np.asarray(jnp.argmax(next_timestep.final_observation, axis=-1)).reshape(-1)
        np.testing.assert_array_equal(reached, expected)
        fours += four
        state, timestep = next_state, next_timestep
    # pgx draws a 4 one time in ten: 20 expected in 200, more than 3 standard deviations off
    # (4.2) would mean the value bit is misread.
    assert abs(fours - 20) < 13


def test_backgammon_outcome_is_the_next_turns_roll_in_pgx_state():
    env = make_env("pgx:backgammon")
    assert env.num_chance_outcomes == 22
    outcome = jax.jit(env.chance_outcome)
    step = jax.jit(env.step)
    # The 21 unordered rolls in the documented order, written out: (1,1), (1,2), ... (6,6).
    rolls = [(low, high) for low in range(6) for high in range(low, 6)]
    rng = np.random.default_rng(1)
    key = jax.random.key(1)
    state, timestep = env.reset(key)
    seen = np.zeros(22, int)
    for _ in range(600):
        key, step_key = jax.random.split(key)
        action = int(rng.choice(np.flatnonzero(np.asarray(timestep.legal_action_mask))))
        next_state, next_timestep = step(step_key, state, jnp.int32(action))
        label = int(
            outcome(timestep.observation, jnp.int32(action), next_timestep.final_observation)
        )
        ended = bool(next_timestep.terminated | next_timestep.truncated)
        passed = int(state.backend.current_player) != int(next_timestep.final_player)
        if passed and not ended:  # the opponent's dice were rolled: pgx holds them
            assert label == rolls.index(tuple(sorted(np.asarray(next_state.backend._dice))))
        else:
            assert label == 21
        seen[label] += 1
        state, timestep = next_state, next_timestep
    turns = seen[:21].sum()
    assert turns > 100  # a random player's turn is two to four moves
    # A double comes up one roll in six.
    doubles = seen[[rolls.index((face, face)) for face in range(6)]].sum()
    assert abs(doubles / turns - 1 / 6) < 4 * np.sqrt(5 / 36 / turns)


def test_environments_without_named_outcomes_have_none():
    env = make_env("gymnax:CartPole-v1")
    assert env.num_chance_outcomes is None and env.chance_outcome is None
