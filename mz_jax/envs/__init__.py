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

Names are ``"gymnax:<id>"`` (every discrete-action gymnax environment), ``"pgx:<id>"`` (every
single-player or two-player pgx game), ``"toy:<id>"`` (small ones of our own with known optimal
policies, :mod:`~mz_jax.envs.toy`: ``toy:gamble``, ``toy:detour``), or a name given to
:func:`register_env` (by convention ``"custom:<id>"``) for an environment of your own;
:func:`list_envs` gives them all.
``"gymnasium:<id>"`` (and ``"gymnasium:<module>:<id>"``) makes a Python environment of gymnasium's
registry and ``"envpool:<task>"`` one of envpool's (Atari's ``Pong-v5``, ...), stepped on the host
through callbacks (:mod:`~mz_jax.envs.host`); those ids are gymnasium's and envpool's to list.

Backend notes:
  * gymnax (>= 1.0): the time limit is ``params.max_steps_in_episode`` (override it with
    ``max_episode_steps``); gymnax reports it as ``truncated`` separately from ``terminated``. The
    legal-action mask is all True and the player always 0. ``FrozenLake-misc``'s tile index is
    observed one-hot (a Discrete observation space; ``observation_shape == (16,)`` on the default
    4 x 4 map); ``FourRooms-misc`` observes integers (cast to float).
    ``MNISTBandit-bsuite`` downloads MNIST when constructed, so :func:`list_envs` leaves it out;
    ``make_env`` still builds it where the download works.
  * pgx: observations (bool or int) are cast to float32 and are from the perspective of the player to
    move. In two-player games ``current_player`` is a player *id*, 0 or 1, drawn at random at reset
    (it is not the colour: either id may move first); ids then alternate, except in backgammon, where
    a turn is several actions (one per die) by the same player: never assume alternation, read
    ``player`` (such games have ``Env.repeats_player``, and training has the network predict who
    moves next: ``network.predict_turn``). Rewards are the actor's own reward (``state.rewards[actor]``), so a winning move
    earns +1 and a losing one -1. An illegal action ends the game at once with -1 for the actor
    (pgx's rule): mask actions before stepping.
    No pgx 2.6 game sets ``truncated`` itself: chess, shogi and go end at a move limit by
    *termination* (scored as pgx scores it); the MinAtar games may run without end, so pass
    ``max_episode_steps`` to truncate them. Stochastic games (chance outside the agent's control,
    which MuZero's deterministic model only averages over): ``2048`` (tile spawns), ``backgammon``
    (dice), ``kuhn_poker`` and ``leduc_holdem`` (card deals; also imperfect information) and the
    ``minatar-*`` games (sticky actions, random spawns). Games with more than two players
    (``sparrow_mahjong``) are refused.

Each :class:`Env` carries ``reward_bound``, the largest |reward| of one transition (None where
unknown), to size the categorical value and reward supports; the gymnax and pgx adapters read it
from their ``REWARD_BOUNDS`` tables (worked out from the backends' sources; e.g. 1 for CartPole and
the board games, 12 for MinAtar Seaquest, None for ``pgx:2048`` and ``GaussianBandit-misc``).

This module is the registry of names (:func:`make_env`, :func:`list_envs`, :func:`register_env`);
:mod:`~mz_jax.envs.base` holds the protocol, :mod:`~mz_jax.envs.gymnax_adapter` and
:mod:`~mz_jax.envs.pgx_adapter` the two backends, and :mod:`~mz_jax.envs.wrappers`
:func:`repeat_action`, frame skip for any single-player environment.
"""

from __future__ import annotations

import difflib
import functools
from collections.abc import Callable
from typing import Any

from mz_jax.envs.base import Env, EnvState, Reflection, TimeStep
from mz_jax.envs.envpool_adapter import ENVPOOL_PREFIX, make_envpool
from mz_jax.envs.gymnasium_adapter import GYMNASIUM_PREFIX, make_gymnasium
from mz_jax.envs.gymnax_adapter import GYMNAX_PREFIX, gymnax_catalog, gymnax_ids, make_gymnax
from mz_jax.envs.pgx_adapter import MORE_THAN_TWO_PLAYERS, PGX_PREFIX, make_pgx, pgx_ids
from mz_jax.envs.toy import TOY_ENVS, TOY_PREFIX
from mz_jax.envs.wrappers import repeat_action

__all__ = [
    "ENVPOOL_PREFIX",
    "GYMNASIUM_PREFIX",
    "GYMNAX_PREFIX",
    "PGX_PREFIX",
    "TOY_PREFIX",
    "Env",
    "EnvState",
    "Reflection",
    "TimeStep",
    "list_envs",
    "make_env",
    "register_env",
    "repeat_action",
]

# Factories given to register_env, by name: consulted by make_env before the gymnax and pgx names.
# The registry lives in the package itself, not a submodule: tests replace it and _supported_names
# on ``mz_jax.envs`` (monkeypatch), which a submodule's functions would not see.
_REGISTERED: dict[str, Callable[..., Env]] = {}


def make_env(name: str, *, max_episode_steps: int | None = None, **kwargs: Any) -> Env:
    """Makes the environment ``name`` (``"gymnax:<id>"``, ``"pgx:<id>"``, ``"gymnasium:<id>"``, ...).

    Args:
      name: one of :func:`list_envs`.
      max_episode_steps: a time limit in transitions. For gymnax it replaces
        ``params.max_steps_in_episode``; for pgx (which has none) it adds one. None keeps the
        backend's own (none for pgx).
      **kwargs: passed to the gymnax environment's constructor (e.g. ``size=10`` for
        ``DeepSea-bsuite``) or to ``gymnasium.make``; pgx games take none.

    Returns:
      The :class:`Env`.

    Raises:
      ValueError: for an unknown name (the message lists close matches first), a continuous-action
        gymnax environment, a pgx game with more than two players, a gymnasium environment whose
        spaces the agent cannot drive or whose module fails to import, or bad arguments.
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
        if env_id in gymnax_ids():
            return make_gymnax(env_id, max_episode_steps, kwargs)
    elif name.startswith(PGX_PREFIX):
        env_id = name[len(PGX_PREFIX) :]
        if env_id in pgx_ids():
            if kwargs:
                raise ValueError(
                    f"pgx games take no keyword arguments, got {sorted(kwargs)} for {name!r}."
                )
            return make_pgx(env_id, max_episode_steps)
    elif name.startswith(GYMNASIUM_PREFIX):
        return make_gymnasium(name[len(GYMNASIUM_PREFIX) :], max_episode_steps, kwargs)
    elif name.startswith(ENVPOOL_PREFIX):
        return make_envpool(name[len(ENVPOOL_PREFIX) :], max_episode_steps, kwargs)
    elif name.startswith(TOY_PREFIX):
        env_id = name[len(TOY_PREFIX) :]
        if env_id in TOY_ENVS:
            try:
                return TOY_ENVS[env_id](max_episode_steps=max_episode_steps, **kwargs)
            except TypeError as error:
                raise ValueError(
                    f"Bad keyword arguments {sorted(kwargs)} for {name!r}: {error}"
                ) from error
    raise ValueError(_unknown_name_message(name, list_envs()))


def list_envs() -> list[str]:
    """Every name :func:`make_env` supports: gymnax ones first (registry order), then pgx ones, the
    ``toy:`` ones, then those given to :func:`register_env` (in order of registration).

    Builds each gymnax environment once (cached) to check that it constructs and has discrete actions;
    pgx games are not built (some take seconds), only those with more than two players are left out.
    """
    return [*_supported_names(), *_REGISTERED]


def register_env(name: str, factory: Callable[..., Env]) -> None:
    """Makes ``make_env(name, max_episode_steps=..., **kwargs)`` return ``factory(max_episode_steps=...,
    **kwargs)``, for an environment that is neither gymnax nor pgx.

    Registration lives in this process only: import the module that registers before
    :func:`mz_jax.training.train.make_train` runs, in every process of a multi-host run. Registering a name
    again replaces its factory.

    Args:
      name: not starting with ``"gymnax:"``, ``"pgx:"`` or ``"toy:"``; use ``"custom:<id>"``, which
        :class:`mz_jax.TrainConfig` accepts (it asks for a ``':'``).
      factory: called with the keyword ``max_episode_steps`` (an int or None) and any keyword
        arguments of ``make_env``; returns an :class:`Env`, used as it is (set its ``reward_bound``
        where the largest |reward| of a transition is known; None gives MuZero's wide supports of
        601 bins).
    """
    reserved = (GYMNAX_PREFIX, PGX_PREFIX, TOY_PREFIX, GYMNASIUM_PREFIX, ENVPOOL_PREFIX)
    if not isinstance(name, str) or not name or name.startswith(reserved):
        raise ValueError(
            f"a registered name must be a non-empty str not starting with {', '.join(reserved)} "
            f"(e.g. 'custom:corridor'); got {name!r}."
        )
    if not callable(factory):
        raise ValueError(f"factory must be callable; got {factory!r}.")
    _REGISTERED[name] = factory


@functools.cache
def _supported_names() -> tuple[str, ...]:
    names = [GYMNAX_PREFIX + env_id for env_id, ok in gymnax_catalog().items() if ok]
    names += [PGX_PREFIX + env_id for env_id in pgx_ids() if env_id not in MORE_THAN_TWO_PLAYERS]
    names += [TOY_PREFIX + env_id for env_id in TOY_ENVS]
    return tuple(names)


def _unknown_name_message(name: str, supported: list[str]) -> str:
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
        f"Unknown environment name {name!r}; names are 'gymnax:<id>', 'pgx:<id>', 'toy:<id>' or "
        f"one given to mz_jax.envs.register_env.{hint} "
        f"Available: {', '.join(close + rest)}."
    )
