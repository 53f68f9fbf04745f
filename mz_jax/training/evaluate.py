"""Greedy evaluation, compiled: one episode in each of N environments, alone or against an opponent.

The agent searches without root noise and plays the most visited (or best) action; in a two-player
game it meets a uniformly random player, the MCTS baseline on the true game
(:mod:`mz_jax.mcts.baseline`) or, in backgammon, the pip-count heuristic
(:mod:`mz_jax.envs.backgammon`), in each seat for half of the episodes. The steps run in one
``lax.while_loop`` that stops once every episode has ended.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from mz_jax.config.search import SearchConfig
from mz_jax.envs import Env
from mz_jax.mcts import baseline
from mz_jax.mcts.policies import search
from mz_jax.training.actor import perspective_sign
from mz_jax.types import Array, MuZeroNetwork, Params


class EvalResult(NamedTuple):
    """The first episode of each evaluation environment; leaves ``[N]``.

    Attributes:
      episode_return: return from the agent's perspective (for two-player games: +1 win, -1 loss).
      episode_length: steps until the episode ended (or ``max_steps``).
      completed: whether the episode ended within ``max_steps``.
    """

    episode_return: Array
    episode_length: Array
    completed: Array


def evaluate(
    params: Params,
    key: Array,
    *,
    env: Env,
    network: MuZeroNetwork,
    search_config: SearchConfig,
    num_episodes: int,
    max_steps: int,
    opponent: str | None = None,
) -> EvalResult:
    """Greedy play (no root noise, argmax action) of one episode in each of ``num_episodes`` envs.

    Args:
      opponent: None for self-play (single-player environments), ``"random"``, ``"mcts:N"`` or
        ``"pip_count"``: in a two-player game the agent meets a uniformly random legal player, the
        MCTS baseline with N simulations on the true game (:mod:`mz_jax.mcts.baseline`, pgx games
        only), or the pip-count heuristic (:mod:`mz_jax.envs.backgammon`, ``pgx:backgammon``
        only), moving first in the first half of the episodes and second in the other half.

    Raises:
      ValueError: an opponent that cannot play ``env``
        (:func:`mz_jax.mcts.baseline.check_opponent_env`).
    """
    if opponent is not None:
        baseline.check_opponent_env(env, opponent)
    num_simulations = None if opponent is None else baseline.parse_opponent(opponent)
    game = None if num_simulations is None else baseline.game_of(env, opponent)
    if opponent == baseline.PIP_COUNT:
        from mz_jax.envs.backgammon import pip_count_action  # pgx, imported where it plays
    reset_key, loop_key = jax.random.split(key)
    env_state, timestep = jax.vmap(env.reset)(jax.random.split(reset_key, num_episodes))
    moves_first = jnp.arange(num_episodes) < (num_episodes + 1) // 2
    # pgx draws which player id moves first; the agent takes that id, or the other one.
    agent_id = jnp.where(moves_first, timestep.player, 1 - timestep.player)

    def step(carry, step_key):
        env_state, timestep, ret, length, done = carry
        search_key, random_key, env_key = jax.random.split(step_key, 3)
        out = search(
            params,
            search_key,
            timestep.observation,
            timestep.legal_action_mask,
            network=network,
            config=search_config,
            greedy=True,
        )
        action = out.action
        if opponent == "random":
            random_action = jax.random.categorical(
                random_key, jnp.where(timestep.legal_action_mask, 0.0, -jnp.inf)
            ).astype(jnp.int32)
            action = jnp.where(timestep.player == agent_id, action, random_action)
        elif opponent == baseline.PIP_COUNT:
            heuristic_action = pip_count_action(env_state.backend)
            action = jnp.where(timestep.player == agent_id, action, heuristic_action)
        elif num_simulations is not None:
            baseline_action = baseline.mcts_action(
                random_key,
                env_state.backend,
                game=game,
                num_simulations=num_simulations,
                value_bound=env.return_bound or 1.0,
            )
            action = jnp.where(timestep.player == agent_id, action, baseline_action)
        env_state, next_timestep = jax.vmap(env.step)(
            jax.random.split(env_key, num_episodes), env_state, action
        )
        sign = (
            perspective_sign(timestep.player, agent_id)
            if env.num_players == 2
            else jnp.ones(num_episodes)
        )
        active = ~done
        ret = ret + jnp.where(active, sign * next_timestep.reward, 0.0)
        length = length + active.astype(jnp.int32)
        done = done | next_timestep.terminated | next_timestep.truncated
        return (env_state, next_timestep, ret, length, done), None

    init = (
        env_state,
        timestep,
        jnp.zeros(num_episodes, jnp.float32),
        jnp.zeros(num_episodes, jnp.int32),
        jnp.zeros(num_episodes, bool),
    )
    # Steps stop once every episode has ended (most evaluations of a learning agent end long before
    # max_steps); step t uses key t of the same split either way, so the results do not depend on it.
    step_keys = jax.random.split(loop_key, max_steps)

    def unfinished(loop):
        t, carry = loop
        return (t < max_steps) & ~jnp.all(carry[-1])

    def next_step(loop):
        t, carry = loop
        return t + 1, step(carry, step_keys[t])[0]

    _, (_, _, ret, length, done) = jax.lax.while_loop(unfinished, next_step, (0, init))
    return EvalResult(episode_return=ret, episode_length=length, completed=done)
