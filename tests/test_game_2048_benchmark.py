"""``benchmarks/diagnostics/game_2048.py``: the largest tile read off pgx's 2048 boards, and the
games it plays."""

import sys
from pathlib import Path

import jax
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from diagnostics import game_2048


def board(tiles: dict[tuple[int, int], int]) -> np.ndarray:
    """A pgx 2048 observation [4, 4, 31]: channel 0 marks an empty cell, channel i tile 2^i."""
    obs = np.zeros((4, 4, 31), bool)
    obs[:, :, 0] = True
    for (row, col), tile in tiles.items():
        obs[row, col, 0] = False
        obs[row, col, int(np.log2(tile))] = True
    return obs


def test_largest_tile_of_hand_made_boards():
    boards = np.stack(
        [
            board({}),
            board({(0, 0): 2}),
            board({(0, 0): 2, (3, 3): 512, (1, 2): 64}),
            board({(2, 1): 4, (2, 2): 4}),
            board({(0, 3): 2**30}),
        ]
    )
    got = np.asarray(game_2048.largest_tile(jax.numpy.asarray(boards)))
    np.testing.assert_array_equal(got, [0, 2, 512, 4, 2**30])


def test_random_games_end_and_their_scores_count_the_merges_that_built_the_largest_tile():
    env = game_2048.make_env(game_2048.ENV)
    games = game_2048.run_games(
        env, game_2048.random_choice, jax.random.key(0), num_games=8, max_steps=2_000
    )
    # Random play fills the board within a few hundred moves.
    assert np.all(games.ended) and np.all(games.length > 0) and np.all(games.length < 2_000)
    # Spawns are 2s and 4s; a larger tile is built only by merges, which score every tile they make:
    # the tile itself and, recursively, its two halves (v/2 + v/2, each from two v/4, ... down to
    # 8 = 4 + 4, with 4s possibly spawned): at least v + 2(v/2) + ... = v (log2 v - 2) points.
    tile = games.max_tile
    assert np.all(tile >= 8)
    assert np.all((tile & (tile - 1)) == 0)  # powers of two
    assert np.all(games.score >= tile * (np.log2(tile) - 2))
