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

from mz_jax.envs.base import Env, EnvState, TimeStep, as_action, restart, select_tree
from mz_jax.types import Array

PGX_PREFIX = "pgx:"

MORE_THAN_TWO_PLAYERS = frozenset({"sparrow_mahjong", "mahjong"})
"""Known from pgx 2.6 without constructing (shogi alone takes seconds to build); :func:`make_pgx`
still checks ``num_players`` of whatever it builds."""


def pgx_ids() -> tuple[str, ...]:
    """Every game pgx offers, whatever its number of players."""
    import pgx

    return tuple(pgx.available_envs())


@functools.cache
def _build_pgx(env_id: str):
    # Cached: building a game can take seconds (shogi, chess) and the object is immutable.
    import pgx

    return pgx.make(env_id)


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
    return Env(
        name=name,
        num_actions=int(shapes.legal_action_mask.shape[0]),
        observation_shape=tuple(shapes.observation.shape),
        num_players=int(env.num_players),
        max_episode_steps=max_episode_steps,
        reset=reset,
        step=step,
    )
