"""Compiled self-play: batched environments and batched search under one ``lax.scan``.

A rollout of T steps over E environments is a single jitted program with no host round trip per step:
observe, search, act, step (environments reset themselves), record. This is the Anakin architecture
of the Podracer paper (Hessel et al., 2021). Everything the target builder needs is recorded in a
:class:`mz_jax.Trajectory`. Greedy evaluation is :mod:`mz_jax.training.evaluate`.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from mz_jax.config.search import SearchConfig
from mz_jax.core import transforms, validation
from mz_jax.envs import Env, EnvState, TimeStep
from mz_jax.mcts.policies import search
from mz_jax.types import Array, MuZeroNetwork, Params, Trajectory


class ActorState(NamedTuple):
    """The self-play environments between rollouts; leaves ``[E, ...]``.

    Attributes:
      env_state: the environments' states.
      timestep: the latest time step of each environment (the observation to act on next).
      episode_return: ``[E]`` float32, return of the episode so far, from player 0's perspective.
      episode_length: ``[E]`` int32, steps of the episode so far.
      explore_action: ``[E]`` int32, the exploratory action being repeated (εz-greedy; see
        :func:`rollout`), or None where exploratory actions are not repeated (the state then has
        the leaves, and the checkpoints the layout, it had before εz-greedy existed).
      explore_steps_left: ``[E]`` int32, the steps it is still to be played for (0: none), or None.
    """

    env_state: EnvState
    timestep: TimeStep
    episode_return: Array
    episode_length: Array
    explore_action: Array | None = None
    explore_steps_left: Array | None = None


class RolloutStats(NamedTuple):
    """Sums over the episodes that ended during a rollout (divide by ``episodes`` for means).

    Attributes:
      episodes: number of episodes that ended.
      return_sum: sum of their returns (player 0's perspective).
      length_sum: sum of their lengths.
      nonfinite: number of steps whose observation or reward was not finite.
    """

    episodes: Array
    return_sum: Array
    length_sum: Array
    nonfinite: Array


def init_actor(
    env: Env, key: Array, *, num_envs: int, repeat_exploration: bool = False
) -> ActorState:
    """Resets ``num_envs`` environments; with ``repeat_exploration``, the state also carries the
    repeated exploratory actions of εz-greedy (``rollout(..., exploration_repeat_exponent=μ)``)."""
    env_state, timestep = jax.vmap(env.reset)(jax.random.split(key, num_envs))
    zeros = jnp.zeros(num_envs, jnp.int32) if repeat_exploration else None
    return ActorState(
        env_state=env_state,
        timestep=timestep,
        episode_return=jnp.zeros(num_envs, jnp.float32),
        episode_length=jnp.zeros(num_envs, jnp.int32),
        explore_action=zeros,
        explore_steps_left=zeros,
    )


MAX_EXPLORATION_REPEAT = 10_000
"""The longest an εz-greedy exploratory action is repeated (Dabney et al., 2021, truncate there)."""


def zeta_durations(key: Array, exponent: float, shape: tuple[int, ...]) -> Array:
    """Draws int32 durations ``n`` in ``[1, MAX_EXPLORATION_REPEAT]`` with ``P(n) ∝ n^-exponent``."""
    # Inverse CDF: the first n whose cumulative probability exceeds a uniform draw.
    n = jnp.arange(1, MAX_EXPLORATION_REPEAT + 1, dtype=jnp.float32)
    cdf = jnp.cumsum(n ** -float(exponent))
    u = jax.random.uniform(key, shape) * cdf[-1]
    index = jnp.searchsorted(cdf, u, side="right")
    return (jnp.minimum(index, MAX_EXPLORATION_REPEAT - 1) + 1).astype(jnp.int32)


def perspective_sign(player: Array, of_player: Array) -> Array:
    """+1 where ``player`` is ``of_player``, else -1 (two-player zero-sum)."""
    return jnp.where(player == of_player, 1.0, -1.0)


def rollout(
    params: Params,
    key: Array,
    state: ActorState,
    *,
    env: Env,
    network: MuZeroNetwork,
    search_config: SearchConfig,
    num_steps: int,
    temperature: float | Array = 1.0,
    random_action_probability: float | Array = 0.0,
    exploration_repeat_exponent: float | None = None,
    record_final_observation: bool = False,
) -> tuple[ActorState, Trajectory, RolloutStats]:
    """Plays ``num_steps`` steps in every environment with search; returns data ``[T, E, ...]``.

    Where an episode is truncated by a time limit, the state it reached is no longer in the stream
    (the environment has reset), so its value is estimated here with the network
    (``bootstrap_value``) for the n-step targets.

    With ``random_action_probability`` p > 0 (a number or a traced scalar), each environment plays a
    uniformly random legal action instead of the search's with probability p; the recorded policy
    target is still the search's, and the step is recorded as ``exploratory`` (the value targets of
    the search's policy stop there). At a Python 0 the program and its random numbers are those
    without the option.

    With ``exploration_repeat_exponent`` μ > 1 (static; εz-greedy, Dabney et al., 2021), an
    exploratory draw is repeated: its action is played for n steps, n from :func:`zeta_durations`
    (``P(n) ∝ n^-μ``), or until the episode ends, without new draws meanwhile; where the repeated
    action is illegal at a step, a fresh uniformly random legal one is played (and repeated) from
    there. Every step that plays another action than the search's is ``exploratory``. None: n = 1
    (plain ε-greedy).

    With ``record_final_observation`` (static), the observation and player a truncated transition
    reached are recorded too, so that reanalyse can refresh its ``bootstrap_value``; otherwise
    ``final_observation`` is a placeholder 0 per step (see :func:`transition_spec`).
    """

    if exploration_repeat_exponent is not None:
        validation.check(
            "exploration_repeat_exponent", exploration_repeat_exponent, kind="argument"
        )
        if state.explore_steps_left is None:
            raise ValueError(
                "exploration_repeat_exponent needs an actor state that carries the repeated "
                "actions: init_actor(..., repeat_exploration=True)"
            )

    def step(
        actor: ActorState, step_key: Array
    ) -> tuple[ActorState, tuple[Trajectory, RolloutStats]]:
        search_key, env_key = jax.random.split(step_key)
        timestep = actor.timestep
        out = search(
            params,
            search_key,
            timestep.observation,
            timestep.legal_action_mask,
            network=network,
            config=search_config,
            temperature=temperature,
        )
        action, explore, explore_action, steps_left = _explore(
            step_key,
            out.action,
            timestep.legal_action_mask,
            actor.explore_action,
            actor.explore_steps_left,
            random_action_probability=random_action_probability,
            exploration_repeat_exponent=exploration_repeat_exponent,
        )
        num_envs = action.shape[0]
        env_state, next_timestep = jax.vmap(env.step)(
            jax.random.split(env_key, num_envs), actor.env_state, action
        )
        data = Trajectory(
            observation=timestep.observation,
            action=action,
            reward=next_timestep.reward,
            terminated=next_timestep.terminated,
            truncated=next_timestep.truncated,
            policy=out.policy,
            root_value=out.root_value,
            player=timestep.player,
            legal_action_mask=timestep.legal_action_mask,
            bootstrap_value=_bootstrap_value(params, env, network, timestep, next_timestep),
            exploratory=explore,
            **_final(next_timestep, record_final_observation),
        )
        actor, stats = _advance(
            actor, env_state, timestep, next_timestep, explore_action, steps_left
        )
        return actor, (data, stats)

    state, (trajectory, stats) = jax.lax.scan(step, state, jax.random.split(key, num_steps))
    return state, trajectory, jax.tree.map(jnp.sum, stats)


def _explore(
    step_key: Array,
    search_action: Array,
    legal_action_mask: Array,
    explore_action: Array | None,
    steps_left: Array | None,
    *,
    random_action_probability: float | Array,
    exploration_repeat_exponent: float | None,
) -> tuple[Array, Array, Array | None, Array | None]:
    """ε-greedy (εz-greedy with ``exploration_repeat_exponent``) over the search's actions ``[E]``.

    Returns ``(action [E], exploratory [E] bool, explore_action, steps_left)``: the actions to
    play, where they differ from the search's, and the repeated exploratory actions and the steps
    each is still to be played for after this one (as :class:`ActorState` carries them; unchanged
    without repetition). Draws from ``fold_in(step_key, 1)`` (and ``2`` for the durations); at a
    Python ``random_action_probability`` of 0 it draws nothing and returns the search's actions.
    """
    action = search_action
    num_envs = action.shape[0]
    explore = jnp.zeros(num_envs, bool)
    if isinstance(random_action_probability, int | float) and random_action_probability == 0:
        return action, explore, explore_action, steps_left
    explore_key, uniform_key = jax.random.split(jax.random.fold_in(step_key, 1))
    random_action = jax.random.categorical(
        uniform_key, jnp.where(legal_action_mask, 0.0, -jnp.inf)
    ).astype(action.dtype)
    draws = jax.random.uniform(explore_key, (num_envs,)) < random_action_probability
    if exploration_repeat_exponent is not None:
        repeating = steps_left > 0
        draws = draws & ~repeating
        repeat_legal = jnp.take_along_axis(legal_action_mask, explore_action[:, None], axis=-1)[
            :, 0
        ]
        random_action = jnp.where(
            repeating & repeat_legal, explore_action.astype(action.dtype), random_action
        )
        durations = zeta_durations(
            jax.random.fold_in(step_key, 2), exploration_repeat_exponent, (num_envs,)
        )
        steps_left = jnp.where(draws, durations, steps_left) - (draws | repeating)
        explore_action = jnp.where(draws | repeating, random_action, explore_action)
        explore_action = explore_action.astype(jnp.int32)
        steps_left = steps_left.astype(jnp.int32)
        draws = draws | repeating
    action = jnp.where(draws, random_action, action)
    # A random draw of the search's own action keeps the step on the search's policy.
    explore = action != search_action
    return action, explore, explore_action, steps_left


def _bootstrap_value(
    params: Params,
    env: Env,
    network: MuZeroNetwork,
    timestep: TimeStep,
    next_timestep: TimeStep,
) -> Array:
    """``[E]`` float32: the network's value of the state a truncated episode reached, from the
    perspective of the player who acted at ``timestep``; 0 where the step did not truncate, and
    everywhere for an environment without a time limit."""
    num_envs = next_timestep.truncated.shape[0]
    if env.max_episode_steps is None:
        return jnp.zeros(num_envs, jnp.float32)
    final_output, _ = network.initial_inference(params, next_timestep.final_observation)
    final_value = transforms.logits_to_scalar(final_output.value_logits)
    sign = perspective_sign(next_timestep.final_player, timestep.player)
    return jnp.where(next_timestep.truncated, sign * final_value, 0.0)


def _advance(
    actor: ActorState,
    env_state: EnvState,
    timestep: TimeStep,
    next_timestep: TimeStep,
    explore_action: Array | None,
    steps_left: Array | None,
) -> tuple[ActorState, RolloutStats]:
    """The actor state after a step from ``timestep`` to ``next_timestep``, and the step's stats.

    The episode return (player 0's perspective) and length grow by the step and are counted in
    the stats where the episode ended, then restart at 0; so does the exploratory repetition.
    """
    num_envs = next_timestep.truncated.shape[0]
    done = next_timestep.terminated | next_timestep.truncated
    episode_return = actor.episode_return + next_timestep.reward * perspective_sign(
        timestep.player, 0
    )
    episode_length = actor.episode_length + 1
    finite = jnp.isfinite(next_timestep.reward) & jnp.all(
        jnp.isfinite(next_timestep.observation.reshape(num_envs, -1)), axis=-1
    )
    stats = RolloutStats(
        episodes=jnp.sum(done),
        return_sum=jnp.sum(jnp.where(done, episode_return, 0.0)),
        length_sum=jnp.sum(jnp.where(done, episode_length, 0)),
        nonfinite=jnp.sum(~finite),
    )
    actor = ActorState(
        env_state=env_state,
        timestep=next_timestep,
        episode_return=jnp.where(done, 0.0, episode_return),
        episode_length=jnp.where(done, 0, episode_length),
        explore_action=explore_action,
        explore_steps_left=None if steps_left is None else jnp.where(done, 0, steps_left),
    )
    return actor, stats


def _final(timestep: TimeStep, record: bool) -> dict[str, Array]:
    """The ``final_observation`` and ``final_player`` fields of a batch of recorded transitions."""
    num_envs = timestep.truncated.shape[0]
    if not record:
        return {
            "final_observation": jnp.zeros((num_envs,), jnp.float32),
            "final_player": jnp.zeros(num_envs, jnp.int32),
        }
    truncated = timestep.truncated
    where = truncated.reshape(num_envs, *(1,) * (timestep.final_observation.ndim - 1))
    return {
        "final_observation": jnp.where(where, timestep.final_observation, 0.0).astype(jnp.float32),
        "final_player": jnp.where(truncated, timestep.final_player, 0).astype(jnp.int32),
    }


def transition_spec(
    env: Env, *, final_observation: bool = False, observation_dtype: Any = jnp.float32
) -> Trajectory:
    """The shapes and dtypes of one recorded transition of ``env`` (for sizing the replay).

    ``final_observation``: whether rollouts record the observation a truncated transition reached
    (``rollout(record_final_observation=True)``): it doubles the observations' memory, so it is
    kept only where reanalyse refreshes truncation bootstraps; else the field is a scalar
    placeholder (orbax does not save arrays of size 0). ``observation_dtype``: how the replay
    stores observations (uint8: :func:`mz_jax.training.replay.encode`).
    """
    num_actions = env.num_actions
    scalar = lambda dtype: jax.ShapeDtypeStruct((), dtype)
    observation_shape = tuple(env.observation_shape) if final_observation else ()
    return Trajectory(
        observation=jax.ShapeDtypeStruct(tuple(env.observation_shape), observation_dtype),
        action=scalar(jnp.int32),
        reward=scalar(jnp.float32),
        terminated=scalar(jnp.bool_),
        truncated=scalar(jnp.bool_),
        policy=jax.ShapeDtypeStruct((num_actions,), jnp.float32),
        root_value=scalar(jnp.float32),
        player=scalar(jnp.int32),
        legal_action_mask=jax.ShapeDtypeStruct((num_actions,), jnp.bool_),
        bootstrap_value=scalar(jnp.float32),
        exploratory=scalar(jnp.bool_),
        final_observation=jax.ShapeDtypeStruct(observation_shape, observation_dtype),
        final_player=scalar(jnp.int32),
    )
