"""pgx games as :class:`~mz_jax.envs.base.Env`: the names ``"pgx:<id>"``.

Every single-player or two-player pgx game; games with more than two players are refused.
Observations are cast to float32, rewards are the actor's own, and the automatic reset happens
here (pgx has none); ``max_episode_steps`` adds a time limit, which pgx games lack. pgx is imported
when first used.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.envs.base import Env, EnvState, Reflection, TimeStep, as_action, restart, select_tree
from mz_jax.types import Array

PGX_PREFIX = "pgx:"

MORE_THAN_TWO_PLAYERS = frozenset({"sparrow_mahjong", "mahjong"})
"""Known from pgx 2.6 without constructing (shogi alone takes seconds to build); :func:`make_pgx`
still checks ``num_players`` of whatever it builds."""

REWARD_BOUNDS: dict[str, float | None] = {
    # two-player board games: +-1 for a win or loss, 0 otherwise (and -1 for an illegal move,
    # pgx's default ``_illegal_action_penalty``)
    "animal_shogi": 1.0,
    "chess": 1.0,
    "connect_four": 1.0,
    "gardner_chess": 1.0,
    "go_9x9": 1.0,
    "go_19x19": 1.0,
    "hex": 1.0,
    "othello": 1.0,
    "shogi": 1.0,
    "tic_tac_toe": 1.0,
    "backgammon": 3.0,  # 1, 2 (gammon) or 3 (backgammon); an illegal move costs 3
    "kuhn_poker": 2.0,  # the pot: 1 ante, +1 if a bet was called
    "leduc_holdem": 13.0,  # min(chips): 1 ante + 2 raises of 2 (round 1) + 2 raises of 4 (round 2)
    # the sum of the tiles merged in a move: bounded only by the board's sum (~2^18), no useful
    # bound; the supports are MuZero's wide ones unless set (the game_2048 preset sets them)
    "2048": None,
    # the MinAtar games as in gymnax (see mz_jax.envs.gymnax_adapter.REWARD_BOUNDS)
    "minatar-asterix": 1.0,
    "minatar-breakout": 1.0,
    "minatar-freeway": 1.0,
    "minatar-space_invaders": 2.0,  # one alien hit a step, two in the terminal wrap-around step
    "minatar-seaquest": 12.0,  # at most 2 kills + the surfacing bonus oxygen * 10 // 200 <= 10
}
"""The largest |reward| of one transition of each pgx 2.6 game, read off the pgx sources (None:
no useful bound). Games not listed (newer pgx) get None."""


def _mirror_columns(board: Array) -> Array:
    return board[:, ::-1]


REFLECTIONS: dict[str, Reflection] = {
    # A (rows, columns, planes) board mirrored left to right; an action is a column (connect four)
    # or the cell 3 * row + column (tic-tac-toe).
    "connect_four": Reflection(observation=_mirror_columns, actions=tuple(range(6, -1, -1))),
    "tic_tac_toe": Reflection(
        observation=_mirror_columns,
        actions=tuple(3 * row + 2 - column for row in range(3) for column in range(3)),
    ),
}
"""Mirror symmetries (:class:`~mz_jax.envs.base.Reflection`) of pgx games, read off the pgx 2.6
sources. Others have them too (go's and othello's eight, hex's half-turn), not written down here."""


REPEATS_PLAYER = frozenset({"backgammon"})
"""The two-player pgx games where the player who moved can move again (a backgammon turn is one
action per die); in the others the players alternate."""


def _slide_row_left(row: Array) -> Array:
    """One row of 2048 exponents (0 empty) slid left with equal neighbours merged once each,
    left to right: ``[1, 1, 1, 1] -> [2, 2, 0, 0]``, ``[2, 0, 2, 3] -> [3, 3, 0, 0]``."""

    def packed(x: Array) -> Array:  # the non-empty cells in order, then the empty ones
        return x[jnp.argsort(x == 0, stable=True)]

    row = packed(row)
    for i in range(3):
        merge = (row[i] != 0) & (row[i] == row[i + 1])
        row = row.at[i].add(merge.astype(row.dtype)).at[i + 1].set(jnp.where(merge, 0, row[i + 1]))
    return packed(row)


def game_2048_chance_outcome(observation: Array, action: Array, next_observation: Array) -> Array:
    """The chance outcome of one 2048 move: ``2 * cell + (0 for a new 2, 1 for a new 4)``.

    pgx's board is 16 cells of exponents (0 empty), observed as one-hot planes ``[4, 4, 31]``; a
    move (0 left, 1 up, 2 right, 3 down) slides and merges the tiles, then a 2 (probability 0.9)
    or a 4 lands on an empty cell drawn uniformly. The new tile is the cell empty after the slide
    and taken in ``next_observation``. 32 outcomes; a pair of observations no move joins (across
    an episode's end) gets some outcome in range.
    """
    board = jnp.argmax(observation, axis=-1)
    next_board = jnp.argmax(next_observation, axis=-1)
    # As pgx does: turn the board so that the move slides left, slide, turn back.
    turned = jax.lax.switch(action, [lambda b, k=k: jnp.rot90(b, k) for k in range(4)], board)
    slid = jax.vmap(_slide_row_left)(turned)
    afterstate = jax.lax.switch(action, [lambda b, k=k: jnp.rot90(b, -k) for k in range(4)], slid)
    new = ((afterstate == 0) & (next_board != 0)).reshape(-1)
    cell = jnp.argmax(new)
    four = next_board.reshape(-1)[cell] >= 2
    return (2 * cell + four).astype(jnp.int32)


def _unordered_roll_index() -> np.ndarray:
    index = np.zeros((6, 6), np.int32)
    for n, (low, high) in enumerate((i, j) for i in range(6) for j in range(i, 6)):
        index[low, high] = n
    return index


_ROLL_INDEX = _unordered_roll_index()
BACKGAMMON_NO_ROLL = 21
"""The backgammon outcome of a move after which no dice are rolled."""


def backgammon_chance_outcome(observation: Array, action: Array, next_observation: Array) -> Array:
    """The chance outcome of one backgammon move: the roll that starts the next turn, or none.

    pgx's observation is the board (28 numbers) and the count of each die face the player to move
    may still play (6). A move (``action = 6 * source + face``, source 0 the no-op) plays one die;
    the turn passes when it played the last one or was the no-op, and then the opponent's dice
    are rolled. The outcome is the roll as an unordered pair of faces, ``0..20`` in the order
    (1,1), (1,2), ... (1,6), (2,2), ... (6,6), read off ``next_observation``'s counts (a double
    shows one face four times); ``21`` (:data:`BACKGAMMON_NO_ROLL`) when the same player moves
    again or the game ended. 22 outcomes.
    """
    dice = observation[28:34]
    next_dice = next_observation[28:34]
    turn_passes = (action // 6 == 0) | (dice.sum() <= 1)
    faces = next_dice > 0
    low = jnp.argmax(faces)
    high = 5 - jnp.argmax(faces[::-1])
    rolled = turn_passes & faces.any()
    return jnp.where(rolled, jnp.asarray(_ROLL_INDEX)[low, high], BACKGAMMON_NO_ROLL).astype(
        jnp.int32
    )


CHANCE_OUTCOMES = {
    "2048": (32, game_2048_chance_outcome),
    "backgammon": (22, backgammon_chance_outcome),
}
"""The pgx games whose chance outcomes mz_jax can name: ``id -> (number of outcomes, function)``
(:attr:`mz_jax.envs.base.Env.chance_outcome`)."""


def pgx_ids() -> tuple[str, ...]:
    """Every game pgx offers, whatever its number of players."""
    import pgx

    return tuple(pgx.available_envs())


@functools.cache
def _build_pgx(env_id: str):
    # Cached: building a game can take seconds (shogi, chess) and the object is immutable.
    import pgx

    return pgx.make(env_id)


def pgx_game(name: str):
    """The pgx game object (``pgx.Env``) behind the environment ``"pgx:<id>"``: the one
    :func:`make_pgx` wraps, to be stepped without the automatic reset (e.g. as a search model).

    Raises:
      ValueError: for a name that is not ``"pgx:"`` followed by a pgx game.
    """
    env_id = name[len(PGX_PREFIX) :] if name.startswith(PGX_PREFIX) else None
    if env_id not in pgx_ids():
        raise ValueError(f"{name!r} is not a pgx game; allowed 'pgx:<id>' with <id> in {pgx_ids()}")
    return _build_pgx(env_id)


def make_pgx(env_id: str, max_episode_steps: int | None) -> Env:
    """The pgx game ``env_id``, truncated after ``max_episode_steps`` transitions when given.

    Raises:
      ValueError: for a game with more than two players.
    """
    name = PGX_PREFIX + env_id
    env = _build_pgx(env_id)
    if env.num_players not in (1, 2):
        raise ValueError(
            f"{name!r} has {env.num_players} players; mz_jax supports single-player games and "
            "two-player zero-sum games only."
        )

    def observe(backend) -> Array:
        return jnp.asarray(backend.observation, jnp.float32)

    def reset(key: Array) -> tuple[EnvState, TimeStep]:
        backend = env.init(key)
        timestep = restart(
            observe(backend), backend.legal_action_mask, backend.current_player.astype(jnp.int32)
        )
        return EnvState(backend, jnp.int32(0)), timestep

    def step(key: Array, state: EnvState, action: Array) -> tuple[EnvState, TimeStep]:
        key_step, key_reset = jax.random.split(key)
        actor = state.backend.current_player
        reached = env.step(state.backend, as_action(action), key_step)
        episode_step = state.episode_step + 1
        terminated = jnp.asarray(reached.terminated, jnp.bool_)
        truncated = jnp.asarray(reached.truncated, jnp.bool_)
        if max_episode_steps is not None:
            truncated = truncated | (episode_step >= max_episode_steps)
        truncated = truncated & ~terminated
        done = terminated | truncated
        # Under vmap a lax.cond would run both branches anyway; select keeps it simple.
        backend = select_tree(done, env.init(key_reset), reached)
        final_player = reached.current_player.astype(jnp.int32)
        timestep = TimeStep(
            observation=observe(backend),
            legal_action_mask=backend.legal_action_mask,
            player=backend.current_player.astype(jnp.int32),
            reward=reached.rewards[actor].astype(jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_observation=observe(reached),
            final_player=final_player,
        )
        episode_step = jnp.where(done, 0, episode_step).astype(jnp.int32)
        return EnvState(backend, episode_step), timestep

    shapes = jax.eval_shape(reset, jax.random.key(0))[1]
    num_chance_outcomes, chance_outcome = CHANCE_OUTCOMES.get(env_id, (None, None))
    return Env(
        name=name,
        num_actions=int(shapes.legal_action_mask.shape[0]),
        observation_shape=tuple(shapes.observation.shape),
        num_players=int(env.num_players),
        max_episode_steps=max_episode_steps,
        reward_bound=REWARD_BOUNDS.get(env_id),
        # pgx's two-player games are scored once, at the end.
        return_bound=REWARD_BOUNDS.get(env_id) if env.num_players == 2 else None,
        repeats_player=env_id in REPEATS_PLAYER,
        num_chance_outcomes=num_chance_outcomes,
        chance_outcome=chance_outcome,
        reflection=REFLECTIONS.get(env_id),
        reset=reset,
        step=step,
    )
