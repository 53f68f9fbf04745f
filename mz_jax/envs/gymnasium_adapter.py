"""gymnasium's environments as :class:`~mz_jax.envs.Env` stepped on the host
(:mod:`mz_jax.envs.host`): ``"gymnasium:<id>"`` for any id of gymnasium's registry, and its
``module:EnvId`` form, ``"gymnasium:my_envs:Corridor-v0"``, where importing ``my_envs`` registers
``Corridor-v0``. One gymnasium environment per self-play environment, stepped one after the other
and seeded from its key at every reset.
"""

from __future__ import annotations

import numpy as np

from mz_jax.envs.base import Env
from mz_jax.envs.host import (
    SAME_AS_GYMNAX,
    EnvFailure,
    HostEnv,
    check_actions,
    encoder,
    gymnasium_module,
    host_env,
)

GYMNASIUM_PREFIX = "gymnasium:"


class GymnasiumBatch:
    """n gymnasium environments stepped one after the other."""

    def __init__(self, make, count: int):
        self.envs = [make() for _ in range(count)]

    def reset(self, indices, seeds):
        observations = []
        for i, seed in zip(indices, seeds, strict=True):
            try:
                observations.append(self.envs[i].reset(seed=int(seed))[0])
            except Exception as error:
                raise EnvFailure(i, error) from error
        return np.stack(observations)

    def step(self, indices, actions):
        rows = []
        for i, action in zip(indices, actions, strict=True):
            try:
                rows.append(self.envs[i].step(int(action))[:4])
            except Exception as error:
                raise EnvFailure(i, error) from error
        observations, rewards, terminated, truncated = zip(*rows, strict=True)
        return np.stack(observations), rewards, terminated, truncated

    def close(self):
        for env in self.envs:
            try:
                env.close()
            except Exception:  # closing is best effort
                pass


def _make_function(name: str, env_id: str, max_episode_steps: int | None, kwargs: dict):
    gymnasium = gymnasium_module()
    arguments = dict(kwargs)
    if max_episode_steps is not None:
        arguments["max_episode_steps"] = max_episode_steps

    def make():
        return gymnasium.make(env_id, **arguments)

    try:
        probe = make()
    except ModuleNotFoundError as error:
        module = env_id.split(":", 1)[0]
        raise ValueError(
            f"{name}: importing the module {module!r} that registers it failed: {error}"
        ) from error
    except gymnasium.error.Error as error:
        raise ValueError(
            f"{name}: {error} (gymnasium's registry: gymnasium.pprint_registry(); a module of your "
            "own that registers it: 'gymnasium:my_module:MyEnv-v0')"
        ) from error
    except TypeError as error:
        raise ValueError(f"{name}: bad keyword arguments {sorted(kwargs)}: {error}") from error
    return make, probe


def make_gymnasium(
    env_id: str, max_episode_steps: int | None = None, kwargs: dict | None = None
) -> Env:
    """The gymnasium environment ``env_id`` as an :class:`~mz_jax.envs.Env` stepped on the host,
    one gymnasium environment per self-play environment.

    Args:
      env_id: an id of gymnasium's registry, or ``module:EnvId``.
      max_episode_steps: a time limit in transitions (gymnasium's ``TimeLimit``); None keeps the
        registered one.
      kwargs: passed to ``gymnasium.make``.

    Raises:
      ValueError: an id gymnasium does not know, a module that fails to import, or a space the
        agent cannot drive, naming the environment and what is supported.
    """
    name = GYMNASIUM_PREFIX + env_id
    make, probe = _make_function(name, env_id, max_episode_steps, kwargs or {})
    try:
        action_space = probe.action_space
        check_actions(name, action_space)
        observation_shape, encode = encoder(name, probe.observation_space)
        limit = probe.spec.max_episode_steps if probe.spec is not None else None
    finally:
        probe.close()
    host = HostEnv(
        name, lambda seeds: GymnasiumBatch(make, len(seeds)), encode, int(action_space.start)
    )
    same = env_id if env_id in SAME_AS_GYMNAX and not kwargs else None
    return host_env(host, int(action_space.n), observation_shape, limit, same_as_gymnax=same)
