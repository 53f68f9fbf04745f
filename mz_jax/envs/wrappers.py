"""Environments made from environments: :func:`repeat_action` (frame skip)."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp

from mz_jax.envs.base import Env, EnvState, TimeStep, as_action, select_tree
from mz_jax.types import Array


def repeat_action(env: Env, repeats: int) -> Env:
    """``env`` where each action is applied ``repeats`` environment steps in a row (frame skip).

    One step of the returned environment steps ``env`` with the same action until it has done so
    ``repeats`` times, the episode ends (terminated or truncated), or the action is no longer legal,
    whichever comes first, and reports the last of those steps with the rewards of all of them
    summed (undiscounted, as MuZero's Atari agent skips frames). An episode that ends inside a
    repeat ends the step: the state and observation returned belong to the next episode, as with
    any step of ``env``. So an agent decides once every ``repeats`` steps, each decision moves the
    environment further, and an episode of T steps takes ``ceil(T / repeats)`` decisions.

    Args:
      env: a single-player environment.
      repeats: steps per action, >= 1; 1 returns ``env`` itself.

    Returns:
      The environment, named ``env.name``, whose ``max_episode_steps`` counts decisions and whose
      ``reward_bound`` is ``repeats`` times ``env``'s.

    Raises:
      ValueError: ``repeats`` not an integer >= 1, or a two-player ``env`` (its players alternate
        between actions, so repeating an action would move for the other player).
    """
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"repeats must be an integer >= 1; got {repeats!r}")
    if repeats == 1:
        return env
    if env.num_players != 1:
        raise ValueError(
            f"repeats = {repeats} needs a single-player environment; {env.name} has "
            f"{env.num_players} players, who take turns between actions"
        )

    def step(key: Array, state: EnvState, action: Array) -> tuple[EnvState, TimeStep]:
        action = as_action(action)

        def stops(timestep: TimeStep) -> Array:
            ended = timestep.terminated | timestep.truncated
            return ended | ~timestep.legal_action_mask[action]

        def substep(carry, key):
            state, timestep, reward, stopped = carry
            next_state, next_timestep = env.step(key, state, action)
            state = select_tree(stopped, state, next_state)
            timestep = select_tree(stopped, timestep, next_timestep)
            reward = reward + jnp.where(stopped, 0.0, next_timestep.reward)
            return (state, timestep, reward, stopped | stops(next_timestep)), None

        keys = jax.random.split(key, repeats)
        state, timestep = env.step(keys[0], state, action)  # the first step is always taken
        carry = (state, timestep, timestep.reward, stops(timestep))
        (state, timestep, reward, _), _ = jax.lax.scan(substep, carry, keys[1:])
        return state, timestep._replace(reward=reward.astype(jnp.float32))

    max_steps = env.max_episode_steps
    return dataclasses.replace(
        env,
        max_episode_steps=None if max_steps is None else -(-max_steps // repeats),
        reward_bound=None if env.reward_bound is None else repeats * env.reward_bound,
        # A repeated action draws chance once per repeat: no one outcome names the transition.
        num_chance_outcomes=None,
        chance_outcome=None,
        step=step,
    )
