"""Matches between two players of a two-player game, compiled: checkpoints' agents and baselines.

::

    scores = play_match(key, env=agent.env, player_a=agent, player_b="mcts:50", num_games=32,
                        max_steps=9)

A player is an :class:`~mz_jax.run.agent.Agent` (its greedy search with its own parameters) or a
baseline of :mod:`mz_jax.mcts.baseline`; a match of ``num_games`` games gives each player the first
move in half of them and runs as one ``lax.while_loop`` over vmapped environments.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.envs import Env
from mz_jax.mcts import baseline
from mz_jax.mcts.policies import search
from mz_jax.run.agent import Agent
from mz_jax.training.actor import perspective_sign
from mz_jax.types import Array

Player = Agent | str
"""A player of :func:`play_match`: an :class:`~mz_jax.run.agent.Agent` (its greedy search with its
own parameters), ``"random"`` (a uniformly random legal move) or ``"mcts:N"`` (the MCTS baseline
with N simulations on the true game; pgx games only); also ``"pip_count"`` in pgx:backgammon."""


class Mover(NamedTuple):
    """A player as the compiled match calls it.

    Attributes:
      kind: what decides the compiled program (``"agent"``, ``"random"``, ``"mcts:N"``); movers of
        one kind differ in ``params`` alone.
      act: ``act(params, key, env_state, timestep) -> [B]`` int32, the moves in B positions
        (``env_state`` and ``timestep`` with a leading batch axis).
      params: the parameters ``act`` takes (None for the baselines).
    """

    kind: str
    act: Callable[[Any, Array, Any, Any], Array]
    params: Any


def agent_mover(network: Any, search_config: Any, params: Any) -> Mover:
    def act(params, key, env_state, timestep):
        del env_state
        return search(
            params,
            key,
            timestep.observation,
            timestep.legal_action_mask,
            network=network,
            config=search_config,
            greedy=True,
        ).action

    return Mover("agent", act, params)


def baseline_mover(env: Env, name: str) -> Mover:
    """The baseline ``name`` on ``env``; raises ``ValueError`` where it cannot play there."""
    baseline.check_opponent_env(env, name, field="player")
    num_simulations = baseline.parse_opponent(name)
    if name == "random":

        def act(params, key, env_state, timestep):
            logits = jnp.where(timestep.legal_action_mask, 0.0, -jnp.inf)
            return jax.random.categorical(key, logits).astype(jnp.int32)

    elif name == baseline.PIP_COUNT:
        from mz_jax.envs.backgammon import pip_count_action  # pgx, imported where it plays

        def act(params, key, env_state, timestep):
            return pip_count_action(env_state.backend)

    else:
        game = baseline.game_of(env, name)

        def act(params, key, env_state, timestep):
            return baseline.mcts_action(
                key,
                env_state.backend,
                game=game,
                num_simulations=num_simulations,
                value_bound=env.return_bound or 1.0,
            )

    return Mover(name, act, None)


def _mover(player: Player, env: Env) -> Mover:
    if isinstance(player, Agent):
        return agent_mover(player.network, player.search_config, player.params)
    if not isinstance(player, str):
        raise ValueError(
            f"player {player!r} is invalid: allowed an Agent or {baseline.ALLOWED_OPPONENTS}"
        )
    return baseline_mover(env, player)


def _match(
    params_a: Any,
    params_b: Any,
    key: Array,
    *,
    env: Env,
    act_a: Callable,
    act_b: Callable,
    num_games: int,
    max_steps: int,
    opening_moves: int,
) -> tuple[Array, Array]:
    """Player a's return ``[num_games]`` and whether each game ended ``[num_games]``; a moves
    first in the first half of the games, and the first ``opening_moves`` moves are random."""
    reset_key, loop_key = jax.random.split(key)
    env_state, timestep = jax.vmap(env.reset)(jax.random.split(reset_key, num_games))
    moves_first = jnp.arange(num_games) < num_games // 2
    # The environment draws which player id moves first; a takes that id, or the other one.
    a_id = jnp.where(moves_first, timestep.player, 1 - timestep.player)
    step_keys = jax.random.split(loop_key, max_steps)

    def step(loop):
        t, env_state, timestep, ret, done = loop
        a_key, b_key, env_key = jax.random.split(step_keys[t], 3)
        opening_key = jax.random.fold_in(step_keys[t], 1)
        action = jnp.where(
            timestep.player == a_id,
            act_a(params_a, a_key, env_state, timestep),
            act_b(params_b, b_key, env_state, timestep),
        )
        random_action = jax.random.categorical(
            opening_key, jnp.where(timestep.legal_action_mask, 0.0, -jnp.inf)
        ).astype(jnp.int32)
        action = jnp.where(t < opening_moves, random_action, action)
        env_state, next_timestep = jax.vmap(env.step)(
            jax.random.split(env_key, num_games), env_state, action
        )
        # The reward is the mover's; steps after a game's end (an auto-reset game) count nothing.
        sign = perspective_sign(timestep.player, a_id)
        ret = ret + jnp.where(done, 0.0, sign * next_timestep.reward)
        done = done | next_timestep.terminated | next_timestep.truncated
        return t + 1, env_state, next_timestep, ret, done

    def unfinished(loop):
        t, *_, done = loop
        return (t < max_steps) & ~jnp.all(done)

    init = (0, env_state, timestep, jnp.zeros(num_games), jnp.zeros(num_games, bool))
    *_, ret, done = jax.lax.while_loop(unfinished, step, init)
    return ret, done


def compile_match(
    env: Env,
    mover_a: Mover,
    mover_b: Mover,
    *,
    num_games: int,
    max_steps: int,
    opening_moves: int = 0,
) -> Callable[[Any, Any, Array], tuple[Array, Array]]:
    """``match(params_a, params_b, key) -> (return of a, ended)``, jitted."""
    return jax.jit(
        functools.partial(
            _match,
            env=env,
            act_a=mover_a.act,
            act_b=mover_b.act,
            num_games=num_games,
            max_steps=max_steps,
            opening_moves=opening_moves,
        )
    )


def check_games(games: Any, *, field: str = "games") -> None:
    if isinstance(games, bool) or not isinstance(games, int) or games < 2 or games % 2:
        raise ValueError(
            f"{field} {games!r} is invalid: allowed an even integer >= 2 (each player moves first "
            "in half of the games)"
        )


def check_opening_moves(opening_moves: Any) -> None:
    if isinstance(opening_moves, bool) or not isinstance(opening_moves, int) or opening_moves < 0:
        raise ValueError(f"opening_moves {opening_moves!r} is invalid: allowed an integer >= 0")


def check_max_steps(max_steps: Any) -> None:
    if isinstance(max_steps, bool) or not isinstance(max_steps, int) or max_steps < 1:
        raise ValueError(f"max_steps {max_steps!r} is invalid: allowed an integer >= 1")


def scores_of(ret: Any, ended: Any) -> np.ndarray:
    """+1 win, 0 draw, -1 loss ``[N]`` int32; an unfinished game is a draw."""
    return np.where(np.asarray(ended), np.sign(np.asarray(ret)), 0).astype(np.int32)


def play_match(
    key: Array,
    *,
    env: Env,
    player_a: Player,
    player_b: Player,
    num_games: int,
    max_steps: int,
    opening_moves: int = 0,
) -> np.ndarray:
    """Player a's scores in ``num_games`` games of a two-player game, a moving first in the first
    half of the games and second in the other half.

    Each game runs until it ends or ``max_steps`` moves (both players' together); all of them are
    played as one compiled ``lax.while_loop`` over vmapped environments. The first
    ``opening_moves`` moves of each game are uniformly random legal moves, whoever's turn it is:
    greedy agents are deterministic, so without them two agents play the same game in every game
    of a seat.

    Args:
      key: a PRNG key, consumed.
      env: a two-player environment.
      player_a: a :data:`Player`: an ``Agent``, ``"random"`` or ``"mcts:N"``.
      player_b: the other player.
      num_games: games, an even integer >= 2.
      max_steps: moves a game may last, >= 1.
      opening_moves: random moves that open each game, >= 0.

    Returns:
      ``[num_games]`` int32: +1 where a won, -1 where a lost, 0 for a draw or a game that had not
      ended within ``max_steps``.

    Raises:
      ValueError: a player that is none of these or cannot play ``env``
        (:func:`mz_jax.mcts.baseline.check_opponent_env`), or a bad ``num_games`` or ``max_steps``.
    """
    check_games(num_games, field="num_games")
    check_max_steps(max_steps)
    check_opening_moves(opening_moves)
    if env.num_players != 2:
        raise ValueError(f"env {env.name!r} is a single-player environment; a match needs two")
    mover_a, mover_b = _mover(player_a, env), _mover(player_b, env)
    match = compile_match(
        env,
        mover_a,
        mover_b,
        num_games=num_games,
        max_steps=max_steps,
        opening_moves=opening_moves,
    )
    return scores_of(*jax.device_get(match(mover_a.params, mover_b.params, key)))
