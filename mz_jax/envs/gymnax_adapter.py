"""gymnax environments as :class:`~mz_jax.envs.base.Env`: the names ``"gymnax:<id>"``.

Every discrete-action gymnax (>= 1.0) environment. The time limit is
``params.max_steps_in_episode`` (``max_episode_steps`` overrides it), reported by gymnax as
``truncated`` apart from ``terminated``; gymnax's own step resets at the end of an episode. The
legal-action mask is all True and the player always 0. gymnax is imported when first used.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp

from mz_jax.envs.base import Env, EnvState, TimeStep, as_action, restart
from mz_jax.types import Array

GYMNAX_PREFIX = "gymnax:"

# Constructing these downloads data sets; they are not listed, but make_env still accepts them.
_DOWNLOADS_ON_CONSTRUCTION = frozenset({"MNISTBandit-bsuite"})


def gymnax_ids() -> tuple[str, ...]:
    """Every id gymnax registers, buildable here or not."""
    import gymnax

    return tuple(gymnax.registered_envs)


@functools.cache
def gymnax_catalog() -> dict[str, bool]:
    """Whether each gymnax id constructs here with a discrete action space."""
    catalog = {}
    for env_id in gymnax_ids():
        if env_id in _DOWNLOADS_ON_CONSTRUCTION:
            catalog[env_id] = False
            continue
        try:
            _build_gymnax(env_id, None, {})
            catalog[env_id] = True
        except Exception:  # one that cannot be built here (or is continuous) is not listed
            catalog[env_id] = False
    return catalog


def _build_gymnax(env_id: str, max_episode_steps: int | None, kwargs: dict[str, Any]):
    import gymnax
    from gymnax.environments import spaces

    name = GYMNAX_PREFIX + env_id
    try:
        env, params = gymnax.make(env_id, **kwargs)
    except TypeError as error:
        raise ValueError(f"Bad keyword arguments {sorted(kwargs)} for {name!r}: {error}") from error
    except Exception as error:
        raise ValueError(f"Could not construct {name!r} here: {error!r}") from error
    action_space = env.action_space(params)
    if isinstance(action_space, spaces.Box):
        raise ValueError(
            f"{name!r} is continuous (action space {action_space!r}); MuZero here needs a discrete "
            "action space."
        )
    if not isinstance(action_space, spaces.Discrete):
        raise ValueError(
            f"{name!r} has a {type(action_space).__name__} action space; MuZero here needs a "
            "Discrete one."
        )
    if not hasattr(params, "max_steps_in_episode"):
        raise ValueError(f"{name!r} has no params.max_steps_in_episode; gymnax >= 1.0 is needed.")
    if max_episode_steps is not None:
        params = params.replace(max_steps_in_episode=max_episode_steps)
    return env, params, int(action_space.n)


def make_gymnax(env_id: str, max_episode_steps: int | None, kwargs: dict[str, Any]) -> Env:
    """The gymnax environment ``env_id``, built with ``kwargs``.

    Raises:
      ValueError: for bad keyword arguments, one that cannot be built here, or a non-discrete
        action space.
    """
    env, params, num_actions = _build_gymnax(env_id, max_episode_steps, kwargs)
    legal_action_mask = jnp.ones(num_actions, jnp.bool_)
    player = jnp.int32(0)

    def reset(key: Array) -> tuple[EnvState, TimeStep]:
        observation, backend = env.reset(key, params)
        observation = jnp.asarray(observation, jnp.float32)
        return EnvState(backend, jnp.int32(0)), restart(observation, legal_action_mask, player)

    def step(key: Array, state: EnvState, action: Array) -> tuple[EnvState, TimeStep]:
        # gymnax's own step resets with (a split of) key when the episode ends and hands back the
        # pre-reset observation; it keeps env-specific reset rules (DeepSea's running metrics).
        observation, backend, reward, terminated, truncated, info = env.step(
            key, state.backend, as_action(action), params
        )
        terminated = jnp.asarray(terminated, jnp.bool_)
        truncated = jnp.asarray(truncated, jnp.bool_) & ~terminated
        done = terminated | truncated
        timestep = TimeStep(
            observation=jnp.asarray(observation, jnp.float32),
            legal_action_mask=legal_action_mask,
            player=player,
            reward=jnp.asarray(reward, jnp.float32),
            terminated=terminated,
            truncated=truncated,
            final_observation=jnp.asarray(info["final_observation"], jnp.float32),
            final_player=player,
        )
        episode_step = jnp.where(done, 0, state.episode_step + 1).astype(jnp.int32)
        return EnvState(backend, episode_step), timestep

    observation = jax.eval_shape(reset, jax.random.key(0))[1].observation
    return Env(
        name=GYMNAX_PREFIX + env_id,
        num_actions=num_actions,
        observation_shape=tuple(observation.shape),
        num_players=1,
        max_episode_steps=int(params.max_steps_in_episode),
        reset=reset,
        step=step,
    )
