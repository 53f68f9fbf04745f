"""One pure environment protocol for mz_jax, with automatic reset, and adapters for gymnax and pgx.

An :class:`Env` is a pair of pure functions acting on ONE environment (no batch axis; ``jax.vmap`` at
the call site, as in rlax)::

    env = make_env("gymnax:CartPole-v1")
    state, timestep = env.reset(key)                  # timestep.observation: [*env.observation_shape]
    state, timestep = env.step(key, state, action)    # resets by itself when an episode ends

After the step that ends an episode, ``timestep.observation`` is already the first observation of the
next episode; what the ending transition reached is kept in ``timestep.final_observation`` (needed to
bootstrap a value across a time-limit truncation). This is the Anakin setting of the Podracer paper
(Hessel et al., 2021): acting runs as one compiled program and never returns to the host to reset.

Names are ``"gymnax:<id>"`` (every discrete-action gymnax environment) or ``"pgx:<id>"`` (every
single-player or two-player pgx game), or a name given to :func:`register_env` (by convention
``"custom:<id>"``) for an environment of your own; :func:`list_envs` gives them all.

Backend notes:
  * gymnax (>= 1.0): the time limit is ``params.max_steps_in_episode`` (override it with
    ``max_episode_steps``); gymnax reports it as ``truncated`` separately from ``terminated``. The
    legal-action mask is all True and the player always 0. ``FrozenLake-misc`` observes a scalar
    tile index (``observation_shape == ()``); ``FourRooms-misc`` observes integers (cast to float).
    ``MNISTBandit-bsuite`` downloads MNIST when constructed, so :func:`list_envs` leaves it out;
    ``make_env`` still builds it where the download works.
  * pgx: observations (bool or int) are cast to float32 and are from the perspective of the player to
    move. In two-player games ``current_player`` is a player *id*, 0 or 1, drawn at random at reset
    (it is not the colour: either id may move first); ids then alternate, except in backgammon, where
    a turn is several actions (one per die) by the same player: never assume alternation, read
    ``player``. Rewards are the actor's own reward (``state.rewards[actor]``), so a winning move
    earns +1 and a losing one -1. An illegal action ends the game at once with -1 for the actor
    (pgx's rule): mask actions before stepping.
    No pgx 2.6 game sets ``truncated`` itself: chess, shogi and go end at a move limit by
    *termination* (scored as pgx scores it); the MinAtar games may run without end, so pass
    ``max_episode_steps`` to truncate them. Stochastic games (chance outside the agent's control,
    which MuZero's deterministic model only averages over): ``2048`` (tile spawns), ``backgammon``
    (dice), ``kuhn_poker`` and ``leduc_holdem`` (card deals; also imperfect information) and the
    ``minatar-*`` games (sticky actions, random spawns). Games with more than two players
    (``sparrow_mahjong``) are refused.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from mz_jax.types import Array

GYMNAX_PREFIX = "gymnax:"
PGX_PREFIX = "pgx:"

# Constructing these downloads data sets; they are not listed, but make_env still accepts them.
_GYMNAX_DOWNLOADS_ON_CONSTRUCTION = frozenset({"MNISTBandit-bsuite"})
# Known from pgx 2.6 without constructing (shogi alone takes seconds to build); make_env still checks
# num_players of whatever it builds.
_PGX_MORE_THAN_TWO_PLAYERS = frozenset({"sparrow_mahjong", "mahjong"})
# Factories given to register_env, by name: consulted by make_env before the gymnax and pgx names.
_REGISTERED: dict[str, Callable[..., Env]] = {}


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
    reset: Callable[[Array], tuple[EnvState, TimeStep]] = dataclasses.field(repr=False)
    step: Callable[[Array, EnvState, Array], tuple[EnvState, TimeStep]] = dataclasses.field(
        repr=False
    )


def make_env(name: str, *, max_episode_steps: int | None = None, **kwargs: Any) -> Env:
    """Makes the environment ``name`` (``"gymnax:<id>"`` or ``"pgx:<id>"``).

    Args:
      name: one of :func:`list_envs`.
      max_episode_steps: a time limit in transitions. For gymnax it replaces
        ``params.max_steps_in_episode``; for pgx (which has none) it adds one. None keeps the
        backend's own (none for pgx).
      **kwargs: passed to the gymnax environment's constructor (e.g. ``size=10`` for
        ``DeepSea-bsuite``); pgx games take none.

    Returns:
      The :class:`Env`.

    Raises:
      ValueError: for an unknown name (the message lists close matches first), a continuous-action
        gymnax environment, a pgx game with more than two players, or bad arguments.
    """
    if not isinstance(name, str):
        raise ValueError(f"name must be a str like 'gymnax:CartPole-v1', got {name!r}.")
    if max_episode_steps is not None and (
        isinstance(max_episode_steps, bool)
        or not isinstance(max_episode_steps, int)
        or max_episode_steps < 1
    ):
        raise ValueError(
            f"max_episode_steps must be None or a positive int, got {max_episode_steps!r}."
        )
    if name in _REGISTERED:
        env = _REGISTERED[name](max_episode_steps=max_episode_steps, **kwargs)
        if not isinstance(env, Env):
            raise ValueError(
                f"the factory registered for {name!r} returned {type(env).__name__}, not an Env."
            )
        return env
    if name.startswith(GYMNAX_PREFIX):
        env_id = name[len(GYMNAX_PREFIX) :]
        if env_id in _gymnax_ids():
            return _make_gymnax(env_id, max_episode_steps, kwargs)
    elif name.startswith(PGX_PREFIX):
        env_id = name[len(PGX_PREFIX) :]
        if env_id in _pgx_ids():
            if kwargs:
                raise ValueError(
                    f"pgx games take no keyword arguments, got {sorted(kwargs)} for {name!r}."
                )
            return _make_pgx(env_id, max_episode_steps)
    raise ValueError(_unknown_name_message(name))


def list_envs() -> list[str]:
    """Every name :func:`make_env` supports: gymnax ones first (registry order), then pgx ones, then
    those given to :func:`register_env` (in order of registration).

    Builds each gymnax environment once (cached) to check that it constructs and has discrete actions;
    pgx games are not built (some take seconds), only those with more than two players are left out.
    """
    return [*_supported_names(), *_REGISTERED]


def register_env(name: str, factory: Callable[..., Env]) -> None:
    """Makes ``make_env(name, max_episode_steps=..., **kwargs)`` return ``factory(max_episode_steps=...,
    **kwargs)``, for an environment that is neither gymnax nor pgx.

    Registration lives in this process only: import the module that registers before
    :func:`mz_jax.train.make_train` runs, in every process of a multi-host run. Registering a name
    again replaces its factory.

    Args:
      name: not starting with ``"gymnax:"`` or ``"pgx:"``; use ``"custom:<id>"``, which
        :class:`mz_jax.TrainConfig` accepts (it asks for a ``':'``).
      factory: called with the keyword ``max_episode_steps`` (an int or None) and any keyword
        arguments of ``make_env``; returns an :class:`Env`.
    """
    if not isinstance(name, str) or not name or name.startswith((GYMNAX_PREFIX, PGX_PREFIX)):
        raise ValueError(
            f"a registered name must be a non-empty str not starting with {GYMNAX_PREFIX!r} or "
            f"{PGX_PREFIX!r} (e.g. 'custom:corridor'); got {name!r}."
        )
    if not callable(factory):
        raise ValueError(f"factory must be callable; got {factory!r}.")
    _REGISTERED[name] = factory


# ---------------------------------------------------------------------------------------------------
# Shared helpers.


def _restart(observation: Array, legal_action_mask: Array, player: Array) -> TimeStep:
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


def _as_action(action) -> Array:
    action = jnp.asarray(action)
    # Shapes and dtypes are static, so this check costs nothing inside jit.
    if action.ndim != 0 or not jnp.issubdtype(action.dtype, jnp.integer):
        raise ValueError(
            f"action must be an integer scalar for one environment (vmap for a batch), got "
            f"shape {action.shape} and dtype {action.dtype}."
        )
    return action.astype(jnp.int32)


def _select_tree(done: Array, on_done, otherwise):
    return jax.tree.map(
        lambda a, b: jnp.where(done, a, b).astype(jnp.result_type(b)), on_done, otherwise
    )


def _unknown_name_message(name: str) -> str:
    supported = list_envs()

    def similarity(candidate: str) -> float:
        bare = candidate.split(":", 1)[-1]
        query = name.lower()
        return max(
            difflib.SequenceMatcher(None, query, candidate.lower()).ratio(),
            difflib.SequenceMatcher(None, query, bare.lower()).ratio(),
        )

    ranked = sorted(supported, key=similarity, reverse=True)
    close = [candidate for candidate in ranked[:3] if similarity(candidate) >= 0.6]
    rest = [candidate for candidate in supported if candidate not in close]
    hint = f" Did you mean {', '.join(map(repr, close))}?" if close else ""
    return (
        f"Unknown environment name {name!r}; names are 'gymnax:<id>', 'pgx:<id>' or one given to "
        f"mz_jax.envs.register_env.{hint} "
        f"Available: {', '.join(close + rest)}."
    )


@functools.cache
def _supported_names() -> tuple[str, ...]:
    names = [GYMNAX_PREFIX + env_id for env_id, ok in _gymnax_catalog().items() if ok]
    names += [
        PGX_PREFIX + env_id for env_id in _pgx_ids() if env_id not in _PGX_MORE_THAN_TWO_PLAYERS
    ]
    return tuple(names)


# ---------------------------------------------------------------------------------------------------
# gymnax.


def _gymnax_ids() -> tuple[str, ...]:
    import gymnax

    return tuple(gymnax.registered_envs)


@functools.cache
def _gymnax_catalog() -> dict[str, bool]:
    """Whether each gymnax id constructs here with a discrete action space."""
    catalog = {}
    for env_id in _gymnax_ids():
        if env_id in _GYMNAX_DOWNLOADS_ON_CONSTRUCTION:
            catalog[env_id] = False
            continue
        try:
            _build_gymnax(env_id, None, {})
            catalog[env_id] = True
        except Exception:  # one that cannot be built here (or is continuous) is not listed
            catalog[env_id] = False
    return catalog


def _build_gymnax(env_id: str, max_episode_steps: int | None, kwargs: dict):
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


def _make_gymnax(env_id: str, max_episode_steps: int | None, kwargs: dict) -> Env:
    env, params, num_actions = _build_gymnax(env_id, max_episode_steps, kwargs)
    legal_action_mask = jnp.ones(num_actions, jnp.bool_)
    player = jnp.int32(0)

    def reset(key: Array) -> tuple[EnvState, TimeStep]:
        observation, backend = env.reset(key, params)
        observation = jnp.asarray(observation, jnp.float32)
        return EnvState(backend, jnp.int32(0)), _restart(observation, legal_action_mask, player)

    def step(key: Array, state: EnvState, action: Array) -> tuple[EnvState, TimeStep]:
        # gymnax's own step resets with (a split of) key when the episode ends and hands back the
        # pre-reset observation; it keeps env-specific reset rules (DeepSea's running metrics).
        observation, backend, reward, terminated, truncated, info = env.step(
            key, state.backend, _as_action(action), params
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


# ---------------------------------------------------------------------------------------------------
# pgx.


def _pgx_ids() -> tuple[str, ...]:
    import pgx

    return tuple(pgx.available_envs())


@functools.cache
def _build_pgx(env_id: str):
    # Cached: building a game can take seconds (shogi, chess) and the object is immutable.
    import pgx

    return pgx.make(env_id)


def _make_pgx(env_id: str, max_episode_steps: int | None) -> Env:
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
        timestep = _restart(
            observe(backend), backend.legal_action_mask, backend.current_player.astype(jnp.int32)
        )
        return EnvState(backend, jnp.int32(0)), timestep

    def step(key: Array, state: EnvState, action: Array) -> tuple[EnvState, TimeStep]:
        key_step, key_reset = jax.random.split(key)
        actor = state.backend.current_player
        reached = env.step(state.backend, _as_action(action), key_step)
        episode_step = state.episode_step + 1
        terminated = jnp.asarray(reached.terminated, jnp.bool_)
        truncated = jnp.asarray(reached.truncated, jnp.bool_)
        if max_episode_steps is not None:
            truncated = truncated | (episode_step >= max_episode_steps)
        truncated = truncated & ~terminated
        done = terminated | truncated
        # Under vmap a lax.cond would run both branches anyway; select keeps it simple.
        backend = _select_tree(done, env.init(key_reset), reached)
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
