"""envpool's environments as :class:`~mz_jax.envs.Env` stepped on the host
(:mod:`mz_jax.envs.host`): ``"envpool:<task>"`` for any of envpool's tasks (Atari's ``Pong-v5``,
``Breakout-v5``, ..., and the classic-control tasks). Each reset batch is one envpool instance,
stepped through its synchronous API by ``env_id``.
"""

from __future__ import annotations

import difflib
import warnings

import numpy as np

from mz_jax.envs.base import Env
from mz_jax.envs.host import SAME_AS_GYMNAX, HostEnv, check_actions, encoder, host_env

ENVPOOL_PREFIX = "envpool:"


class EnvpoolBatch:
    """n environments of one envpool instance (its synchronous API, subsets by ``env_id``); seeded
    once, at creation, from the first key (envpool seeds each environment from it)."""

    def __init__(self, make, count: int, seed: int):
        self.pool = make(count, seed)

    def reset(self, indices, seeds):
        observations, _ = self.pool.reset(np.asarray(indices, np.int32))
        return observations

    def step(self, indices, actions):
        observations, rewards, terminated, truncated, _ = self.pool.step(
            np.asarray(actions), np.asarray(indices, np.int32)
        )
        return observations, rewards, terminated, truncated

    def close(self):
        try:
            self.pool.close()
        except Exception:
            pass


def make_envpool(
    task: str, max_episode_steps: int | None = None, kwargs: dict | None = None
) -> Env:
    """envpool's task ``task`` (``Pong-v5``, ``Breakout-v5``, ``CartPole-v1``, ...) as an
    :class:`~mz_jax.envs.Env` stepped on the host: each ``reset`` batch is one envpool instance
    of that many environments, stepped through its synchronous API (C++ threads step them in
    parallel), seeded from the batch's first key.

    Observations of rank 3 with the channels first (Atari's stacked frames, ``[4, 84, 84]``) are
    given channels last (``[84, 84, 4]``), as the ResNet reads images.

    Args:
      task: one of ``envpool.list_all_envs()``.
      max_episode_steps: a time limit in transitions (envpool's option); None keeps the task's.
      kwargs: envpool's options of the task (``img_height=96``, ``gray_scale=False``, ...).

    Raises:
      ValueError: envpool not installed, a task it does not know (with close matches), options
        it refuses, or a space the agent cannot drive.
    """
    name = ENVPOOL_PREFIX + task
    try:
        import envpool
    except ImportError as error:
        raise ValueError(
            f"{name}: envpool is not installed: pip install 'mz-jax[atari]' (envpool and ale-py)"
        ) from error
    tasks = envpool.list_all_envs()
    if task not in tasks:
        close = difflib.get_close_matches(task, tasks, n=5, cutoff=0.5)
        hint = f"; close matches: {', '.join(close)}" if close else ""
        raise ValueError(f"{name}: envpool has no task {task!r} (envpool.list_all_envs()){hint}")
    options = dict(kwargs or {})
    if max_episode_steps is not None:
        options["max_episode_steps"] = max_episode_steps

    def make(count: int, seed: int):
        with warnings.catch_warnings():  # gymnasium's note that envpool's float64 bounds are cast
            warnings.simplefilter("ignore", UserWarning)
            return envpool.make(task, env_type="gymnasium", num_envs=count, seed=seed, **options)

    try:
        probe = make(1, 0)
    except (TypeError, ValueError, RuntimeError) as error:
        raise ValueError(
            f"{name}: envpool refused the options {sorted(options)}: {error}"
        ) from None
    try:
        action_space = probe.action_space
        check_actions(name, action_space)
        observation_shape, encode = encoder(name, probe.observation_space)
        limit = getattr(probe.spec.config, "max_episode_steps", None)
    finally:
        probe.close()
    if len(observation_shape) == 3 and observation_shape[0] < min(observation_shape[1:]):
        channels_first = encode
        observation_shape = (*observation_shape[1:], observation_shape[0])
        encode = lambda batch: np.moveaxis(channels_first(batch), 1, -1)
    host = HostEnv(
        name,
        lambda seeds: EnvpoolBatch(make, len(seeds), seeds[0]),
        encode,
        int(action_space.start),
    )
    same = task if task in SAME_AS_GYMNAX and not kwargs else None
    return host_env(host, int(action_space.n), observation_shape, limit, same_as_gymnax=same)
