"""The pip-count heuristic of pgx's backgammon, the evaluation opponent ``"pip_count"``.

pgx keeps the board ``_board`` ``[28]`` int32 from the perspective of the player to move: indices
0-23 are the points, positive counts the mover's checkers and negative the opponent's; the mover
moves from low to high indices and bears off past 23. Index 24 is the mover's bar (a positive
count), 25 the opponent's bar (a negative count), 26 the mover's borne-off checkers and 27 the
opponent's (a negative count). An action ``6 * source + (die - 1)`` moves one checker by one die:
source 0 is the no-op, 1 the bar, ``2..25`` the point ``source - 2`` (156 actions).

A checker's pip count is the distance it still has to travel to bear off (the race count of
Magriel, 1976, "Backgammon"); the heuristic plays the legal action that leaves the largest race
lead, looking one die ahead (one pgx action), not one whole roll: a weak but clearly non-random
player, an opponent that needs no search.

The result of an action is pgx's own private ``pgx.backgammon._move`` (pgx 2.6), so the heuristic
sees exactly the board the game will reach; a pgx release that renames it breaks the import here.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
from pgx.backgammon import _move

from mz_jax.types import Array

NUM_ACTIONS = 156
"""pgx backgammon's actions: 26 sources (no-op, bar, 24 points) x 6 dice."""

_BLOT_WEIGHT = 32
"""Above the most blots a board can hold (15), so blots only break ties in the pip difference."""


def pip_counts(board: Array) -> tuple[Array, Array]:
    """The pip counts of both players on a pgx backgammon board, from the mover's perspective.

    own = sum over the mover's checkers of ``24 - i`` on point i, 25 on the bar (index 24), 0 borne
    off; opponent = sum over the opponent's checkers of ``i + 1`` on point i, 25 on its bar (index
    25), 0 borne off. At the start of a game both are 167.

    Args:
      board: ``[..., 28]`` int, pgx's ``_board``.

    Returns:
      ``(own, opponent)``, each ``[...]`` int32.
    """
    board = jnp.asarray(board, jnp.int32)
    points = board[..., :24]
    point = jnp.arange(24, dtype=jnp.int32)
    own = jnp.sum(jnp.maximum(points, 0) * (24 - point), axis=-1) + 25 * board[..., 24]
    opponent = jnp.sum(jnp.maximum(-points, 0) * (point + 1), axis=-1) - 25 * board[..., 25]
    return own, opponent


def _blots(board: Array) -> Array:
    """``[...]`` the points (0-23) holding exactly one of the mover's checkers of ``[..., 28]``."""
    return jnp.sum(board[..., :24] == 1, axis=-1)


def _action_keys(board: Array, legal_action_mask: Array) -> Array:
    """``[156]`` int32 for one position: ``32 * (opponent - own pips) - own blots`` after each legal
    action, the smallest int32 for an illegal one."""
    actions = jnp.arange(NUM_ACTIONS, dtype=jnp.int32)
    reached = jax.vmap(_move, in_axes=(None, 0))(board, actions)  # [A, 28]
    # pgx never applies the no-op (source 0): _move would read it as a move from index -2.
    reached = jnp.where((actions // 6 == 0)[:, None], board, reached)
    own, opponent = pip_counts(reached)
    keys = _BLOT_WEIGHT * (opponent - own) - _blots(reached)
    return jnp.where(legal_action_mask, keys, jnp.iinfo(jnp.int32).min)


def pip_count_action(state: Any) -> Array:
    """The pip-count heuristic's action in each of B backgammon positions; ``[B]`` int32, legal.

    The legal action whose resulting board (pgx's ``_move``) maximises ``opponent - own`` of
    :func:`pip_counts`; among equals the one leaving the fewest blots (points 0-23 holding exactly
    one of the mover's checkers), then the lowest action index. The no-op leaves the board as it
    is. Jit-compatible; a row with no legal action at all gets action 0.

    Args:
      state: B pgx backgammon positions, a ``pgx.backgammon.State`` with leaves ``[B, ...]``:
        ``_board [B, 28]``, ``legal_action_mask [B, 156]``.
    """
    keys = jax.vmap(_action_keys)(state._board, state.legal_action_mask.astype(bool))
    return jnp.argmax(keys, axis=-1).astype(jnp.int32)
