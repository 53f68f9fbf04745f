"""``benchmarks/diagnostics/tactics.py``: wins in one and moves that hand one over, on hand-made
positions."""

import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pgx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from diagnostics import tactics


def after(game: str, moves: list[int]):
    """A batch of one pgx state: ``moves`` played from the start."""
    env = pgx.make(game)
    state = jax.tree.map(lambda x: x[None], env.init(jax.random.key(0)))
    step = jax.jit(jax.vmap(env.step))
    for move in moves:
        state = step(state, jnp.array([move]))
    assert not bool(state.terminated[0])
    return env, state


@pytest.mark.parametrize(
    ("game", "moves", "wins", "hands"),
    [
        # Connect four, columns 0-6. The first player has stacked three in column 3, the second
        # three in column 4: column 3 wins at once; any move but 3 and 4 leaves column 4 to the
        # opponent, and 4 blocks it.
        ("connect_four", [3, 4, 3, 4, 3, 4], {3}, {0, 1, 2, 5, 6}),
        # The second player to move, with no three of its own: every move but 3 leaves column 3.
        ("connect_four", [3, 4, 3, 4, 3], set(), {0, 1, 2, 4, 5, 6}),
        ("connect_four", [], set(), set()),
        # Tic-tac-toe, cells 0-8 row by row. X (0, 1) completes the top row at 2; O (3, 4) waits at
        # 5, which only 5 itself blocks (0, 1, 3 and 4 are taken).
        ("tic_tac_toe", [0, 3, 1, 4], {2}, {6, 7, 8}),
        # O to move, X holding 0 and 1: every move but 2 leaves X the top row.
        ("tic_tac_toe", [0, 3, 1], set(), {4, 5, 6, 7, 8}),
    ],
)
def test_wins_in_one_and_moves_that_hand_one_over(game, moves, wins, hands):
    env, state = after(game, moves)
    got_wins = np.asarray(jax.jit(tactics.wins_in_one, static_argnums=0)(env, state))[0]
    got_hands = np.asarray(jax.jit(tactics.hands_a_win, static_argnums=0)(env, state))[0]
    assert set(np.flatnonzero(got_wins)) == wins
    assert set(np.flatnonzero(got_hands)) == hands


def test_random_positions_are_unfinished_games_of_the_drawn_length():
    env = pgx.make("connect_four")
    state, alive = jax.jit(tactics.random_positions, static_argnums=(0, 2, 3))(
        env, jax.random.key(3), 256, (4, 9)
    )
    alive = np.asarray(alive)
    assert alive.mean() > 0.9  # four in a row within 9 random moves is rare
    np.testing.assert_array_equal(alive, ~np.asarray(state.terminated))
    # Each move drops one piece: the pieces on the board count the moves played.
    pieces = np.asarray(state.observation).sum(axis=(1, 2, 3))[alive]
    assert pieces.min() >= 4 and pieces.max() <= 9
    assert len(set(pieces.tolist())) == 6  # every length from 4 to 9 was drawn
    assert np.asarray(state.legal_action_mask)[alive].any(axis=1).all()
