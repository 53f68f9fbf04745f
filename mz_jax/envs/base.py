"""The environment protocol of mz_jax: :class:`Env`, :class:`EnvState`, :class:`TimeStep`.

An :class:`Env` is a pair of pure functions acting on ONE environment (no batch axis), which resets
by itself when an episode ends (see :mod:`mz_jax.envs`). Also here: the small helpers every adapter
uses to build time steps, check actions and select between states.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from mz_jax.types import Array


class EnvState(NamedTuple):
    """The state of one environment between steps.

    Attributes:
      backend: the backend's own state (a gymnax ``EnvState`` or a pgx ``State``) of the live episode.
      episode_step: int32 scalar, transitions taken in the live episode (0 after a reset).
    """

    backend: Any
    episode_step: Array


class TimeStep(NamedTuple):
    """What an environment reports after a reset or a step.

    Attributes:
      observation: ``[*observation_shape]`` float32, the observation to act on now (after an automatic
        reset: the first observation of the new episode).
      legal_action_mask: ``[num_actions]`` bool, the legal actions at ``observation``.
      player: int32 scalar, the player to move at ``observation`` (0 in single-player environments).
      reward: float32 scalar, the reward of the last transition, from the perspective of the player
        who took that action (0 after a reset).
      terminated: bool scalar, the last transition ended the episode in a terminal state.
      truncated: bool scalar, the last transition ended the episode by a time limit and did not
        terminate it.
      final_observation: ``[*observation_shape]`` float32, the observation the last transition
        reached, before any automatic reset (equal to ``observation`` when the episode did not end).
      final_player: int32 scalar, the player to move at ``final_observation``.
    """

    observation: Array
    legal_action_mask: Array
    player: Array
    reward: Array
    terminated: Array
    truncated: Array
    final_observation: Array
    final_player: Array


class Reflection(NamedTuple):
    """A mirror symmetry of an environment, for training on mirror images of the data
    (``TrainConfig.augment_reflection``; AlphaGo Zero trained on Go's eight symmetries).

    It is a symmetry when the mirror image of the start-state distribution is itself, and from the
    mirror image of any state, the mirror image of any action leads to the mirror image of the
    state that action leads to, with the same reward, player and end of the episode. Then every
    value is the same at a state and its mirror image, and a good policy at the mirror image
    chooses the mirror images of its actions.

    Attributes:
      observation: ``observation(o) -> o'``, the mirror image of one observation (unbatched, of the
        environment's observation shape; vmap for a batch).
      actions: ``actions[a]``, the mirror image of action ``a``: a permutation of
        ``range(num_actions)``.
    """

    observation: Callable[[Array], Array]
    actions: tuple[int, ...]


@dataclasses.dataclass(frozen=True)
class Env:
    """A single environment as a pair of pure functions; vmap them for a batch.

    Attributes:
      name: the name it was made from, e.g. ``"gymnax:CartPole-v1"``.
      num_actions: A, the size of the discrete action space.
      observation_shape: the shape of one observation.
      num_players: 1, or 2 for a two-player zero-sum game.
      max_episode_steps: the time limit in transitions (an episode reaching it without terminating is
        truncated), or None where there is none.
      reward_bound: the largest |reward| of one transition, or None where unknown (then the
        supports are MuZero's wide ones of 601 bins). Keyword-only with default None, so
        ``Env(...)`` calls written before it existed (positional or keyword) still work; it sizes
        the categorical value and reward supports (``reward_bound / (1 - discount)`` bounds a
        return).
      return_bound: the largest |return| of one episode where it is smaller than the reward bound
        summed over the episode (games scored once, at the end), or None. Keyword-only.
      repeats_player: a two-player game where the player who moved may move again (backgammon: one
        move per die), so that who moves next must be read from ``player``, not assumed to
        alternate; training then has the network predict it (``network.predict_turn``).
        Keyword-only, default False.
      num_chance_outcomes: where the environment can name the chance outcome of each transition, how
        many there are (pgx:2048: 32, the new tile's cell and value; pgx:backgammon: 22, the
        next turn's roll or none); None otherwise. Keyword-only.
      chance_outcome: with ``num_chance_outcomes``, ``chance_outcome(observation, action,
        next_observation) -> int32`` in ``[0, num_chance_outcomes)``, the outcome of one observed
        transition (unbatched; vmap for a batch), which Stochastic MuZero can train on in place of
        its learned codes (``TrainConfig.stochastic.chance_codes="environment"``); None otherwise.
        Keyword-only.
      reflection: a mirror symmetry of the environment (:class:`Reflection`), or None where it
        has none or none is written down. Keyword-only.
      host: for an environment stepped in Python through callbacks (:mod:`mz_jax.envs.host`), the
        host side that holds its environments, whose state no checkpoint holds; None for JAX
        environments. Keyword-only.
      reset: ``reset(key) -> (EnvState, TimeStep)``, the start of an episode.
      step: ``step(key, state, action) -> (EnvState, TimeStep)`` with ``action`` an int32 scalar; when
        the transition ends the episode, the returned state and observation already belong to a
        new episode started with ``key``.
    """

    name: str
    num_actions: int
    observation_shape: tuple[int, ...]
    num_players: int
    max_episode_steps: int | None
    reward_bound: float | None = dataclasses.field(default=None, kw_only=True)
    return_bound: float | None = dataclasses.field(default=None, kw_only=True)
    repeats_player: bool = dataclasses.field(default=False, kw_only=True)
    num_chance_outcomes: int | None = dataclasses.field(default=None, kw_only=True)
    chance_outcome: Callable[[Array, Array, Array], Array] | None = dataclasses.field(
        default=None, kw_only=True, repr=False
    )
    reflection: Reflection | None = dataclasses.field(default=None, kw_only=True, repr=False)
    host: Any = dataclasses.field(default=None, kw_only=True, repr=False, compare=False)
    reset: Callable[[Array], tuple[EnvState, TimeStep]] = dataclasses.field(repr=False)
    step: Callable[[Array, EnvState, Array], tuple[EnvState, TimeStep]] = dataclasses.field(
        repr=False
    )


def restart(observation: Array, legal_action_mask: Array, player: Array) -> TimeStep:
    """The time step of a reset: no reward, not ended, the final observation is ``observation``."""
    return TimeStep(
        observation=observation,
        legal_action_mask=legal_action_mask,
        player=player,
        reward=jnp.float32(0.0),
        terminated=jnp.bool_(False),
        truncated=jnp.bool_(False),
        final_observation=observation,
        final_player=player,
    )


def as_action(action: Any) -> Array:
    """``action`` as an int32 scalar; raises ``ValueError`` for a batch or a non-integer dtype."""
    action = jnp.asarray(action)
    # Shapes and dtypes are static, so this check costs nothing inside jit.
    if action.ndim != 0 or not jnp.issubdtype(action.dtype, jnp.integer):
        raise ValueError(
            f"action must be an integer scalar for one environment (vmap for a batch), got "
            f"shape {action.shape} and dtype {action.dtype}."
        )
    return action.astype(jnp.int32)


def select_tree(done: Array, on_done: Any, otherwise: Any) -> Any:
    """Leaf by leaf, ``on_done`` where ``done`` and ``otherwise`` elsewhere (in its dtypes)."""
    return jax.tree.map(
        lambda a, b: jnp.where(done, a, b).astype(jnp.result_type(b)), on_done, otherwise
    )
