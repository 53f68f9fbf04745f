"""Python environments as :class:`~mz_jax.envs.Env`: gymnasium's and envpool's, stepped on the host.

``make_env("gymnasium:CartPole-v1")`` (any id gymnasium's registry holds, and its ``module:EnvId``
form, ``"gymnasium:my_envs:Corridor-v0"``, where importing ``my_envs`` registers ``Corridor-v0``)
and ``make_env("envpool:Pong-v5")`` (any of envpool's tasks; the two backends are
:mod:`~mz_jax.envs.gymnasium_adapter` and :mod:`~mz_jax.envs.envpool_adapter`, this module what
they share) give an :class:`~mz_jax.envs.Env`
whose ``reset`` and ``step`` are ``jax.pure_callback`` calls into Python: the compiled programs
(self-play under ``lax.scan``, the evaluation's loop, several seeds under ``vmap``, the devices
under ``shard_map``) call back to the host once per step for the whole batch of environments they
step, and everything else (the search, the replay, the learner) stays compiled.

What the callbacks keep on the host: each :class:`HostEnv` owns its environments in batches
(:class:`Batch`: gymnasium's environments stepped one by one, or one envpool instance), each
environment addressed by a *slot* id. ``reset`` over a batch of keys (``vmap(env.reset)(keys)``,
any number of leading batch axes) opens a batch of one environment per key and returns the slot
ids as the environments' state (``EnvState.backend``, int32); a later reset over keys of the same
shape closes the batch the previous one opened, so an evaluation that resets its environments each
time reuses the memory. ``step`` steps each slot with its action and, where the episode ends,
resets it (seeded from the step's key where the backend takes seeds) and returns the first
observation of the next episode, with the observation the step reached in ``final_observation``
(the automatic reset of the JAX environments). The slots are not saved in a checkpoint: a resumed
run starts new episodes (:func:`mz_jax.run.start.start_run`).

Supported spaces: a ``Discrete`` action space (``start`` offsets the actions); a ``Box``
observation (vectors, cast to float32, and images: a ``uint8`` Box is scaled by 1/255 into [0, 1])
or a ``Discrete`` one (one-hot). A time limit
(gymnasium's ``max_episode_steps``, envpool's option, or the argument) truncates episodes. The ids
of :data:`SAME_AS_GYMNAX` take the reward bound and the mirror symmetry of the gymnax environment
of the same id; any other has no reward bound (None) and no mirror symmetry.

A failure inside an environment's ``step`` or ``reset`` is raised as :class:`HostEnvError`, whose
message names the environment, the slot and the step; the compiled program that called it fails,
and :func:`host_failures` raises that error in its place.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.envs.base import Env, EnvState, TimeStep

SAME_AS_GYMNAX = ("CartPole-v1", "Acrobot-v1", "MountainCar-v0")
"""gymnasium's classic-control ids whose dynamics, observations and rewards are those of the gymnax
environment of the same id (gymnax ports them), made without keyword arguments."""


class HostEnvError(ValueError):
    """An environment stepped on the host failed: the message names it, its slot and the step.

    A ``ValueError``, as a problem of the environment the user brings (the command line reports it
    as bad input). Raised inside a callback, it reaches the caller of the compiled program as an
    error of JAX's, whose message holds the whole traceback; :func:`host_failures` raises it again
    as itself.
    """


_failure: list[HostEnvError] = []  # the newest failure in a callback of this process


def _failed(error: HostEnvError) -> HostEnvError:
    _failure[:] = [error]
    return error


@contextlib.contextmanager
def host_failures():
    """Within it, an error of a compiled program that a failing environment's callback caused is
    raised as that :class:`HostEnvError` (the one line that names the environment and the
    step)."""
    _failure.clear()
    # JAX logs the callback's traceback as an error; it stays in the error's message and cause.
    logger = logging.getLogger("jax._src.callback")
    quiet = _HostFailureFilter()
    logger.addFilter(quiet)
    try:
        yield
    except Exception as error:  # JAX raises it as its own error, of a type it picks
        if not _failure or isinstance(error, HostEnvError):
            raise
        failure = _failure.pop()
        _drain_failed_callbacks()
        raise failure from error
    finally:
        logger.removeFilter(quiet)


def _drain_failed_callbacks() -> None:
    """Waits for the other callbacks of the failed program (one per device) and forgets their
    errors, which JAX would otherwise raise again, with their tracebacks, when the process exits.

    ``jax.effects_barrier()`` stops at the first failed device and keeps the rest, so this reads
    JAX's private token set where it is (jax 0.10), and does nothing where it is not."""
    try:
        from jax._src import dispatch

        tokens = dispatch.runtime_tokens
        pending = [*tokens.current_tokens.values(), *tokens.output_runtime_tokens.values()]
    except (ImportError, AttributeError):
        return
    for token in pending:
        try:
            token.block_until_ready()
        except Exception:  # that device's failed callback
            pass
    tokens.clear()


class _HostFailureFilter(logging.Filter):
    """Drops JAX's log record of a callback that raised a :class:`HostEnvError`."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return not isinstance(error, HostEnvError)


def _seed(key_data: np.ndarray) -> int:
    """A 31-bit seed from a key's data (``uint32[2]``)."""
    high, low = (int(x) for x in np.asarray(key_data, np.uint64).reshape(-1)[-2:])
    return ((high << 32) | low) % (2**31 - 1)


class Batch(Protocol):
    """A batch of n Python environments of one kind, the unit a backend gives :class:`HostEnv`
    (:class:`GymnasiumBatch`, :class:`EnvpoolBatch`).

    Observations come out raw (the backend's own arrays, ``[k, ...]`` for k indices); rewards,
    terminated and truncated as ``[k]``. Indices are ``0 <= i < n``. A failure of one environment
    is raised as :class:`EnvFailure` where the backend knows which one failed.
    """

    def reset(self, indices: np.ndarray, seeds: list[int]) -> np.ndarray:
        """Starts new episodes in environments ``indices``, seeded where the backend can."""

    def step(self, indices: np.ndarray, actions: np.ndarray) -> tuple:
        """Steps environments ``indices``: (observations, rewards, terminated, truncated)."""

    def close(self) -> None:
        """Closes the environments (best effort)."""


class EnvFailure(Exception):
    """Environment ``index`` of a :class:`Batch` raised ``error``."""

    def __init__(self, index: int, error: Exception):
        super().__init__(index, error)
        self.index, self.error = int(index), error


class HostEnv:
    """The host side of one :class:`~mz_jax.envs.Env` stepped in Python: its environments, in
    batches (one a ``reset`` call), addressed by slot ids.

    Args:
      name: the environment's name, for messages.
      open_batch: ``open_batch(seeds) -> Batch`` of ``len(seeds)`` environments.
      encode: ``encode(observations [k, ...]) -> float32 [k, *observation_shape]``.
      action_start: added to the agent's actions before the environments get them.
    """

    def __init__(self, name: str, open_batch, encode, action_start: int = 0):
        self.name = name
        self._open_batch = open_batch
        self._encode = encode
        self._action_start = action_start
        self._batches: dict[int, Batch] = {}
        self._slots: dict[int, tuple[int, int]] = {}  # slot -> (batch id, index)
        self._steps: dict[int, int] = {}  # slot -> steps of its episode
        self._shapes: dict[tuple[int, ...], int] = {}  # reset batch shape -> batch id
        self._next_slot = 0
        self._next_batch = 0
        self._lock = threading.Lock()

    @property
    def num_slots(self) -> int:
        """Environments open now."""
        return len(self._slots)

    def environment(self, slot: int) -> Any:
        """The gymnasium environment of ``slot`` (gymnasium's backend; for tests)."""
        batch_id, index = self._slots[int(slot)]
        return self._batches[batch_id].envs[index]

    def close(self) -> None:
        """Closes every environment."""
        with self._lock:
            for batch_id in list(self._batches):
                self._close_batch(batch_id)
            self._shapes.clear()

    def _close_batch(self, batch_id: int) -> None:
        batch = self._batches.pop(batch_id, None)
        for slot in [s for s, (b, _) in self._slots.items() if b == batch_id]:
            del self._slots[slot]
            self._steps.pop(slot, None)
        if batch is not None:
            batch.close()

    def _fail(self, what: str, error: Exception) -> HostEnvError:
        return _failed(HostEnvError(f"{self.name}: {what} raised {type(error).__name__}: {error}"))

    def reset(self, key_data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The callback of ``reset``: ``key_data [*B, 2]`` -> (slots ``[*B]``, observations); a
        new batch of ``prod(B)`` environments, replacing the last one of the same shape."""
        key_data = np.asarray(key_data)
        shape = key_data.shape[:-1]
        seeds = [_seed(k) for k in key_data.reshape(-1, key_data.shape[-1])]
        with self._lock:
            if shape in self._shapes:
                self._close_batch(self._shapes.pop(shape))
            try:
                batch = self._open_batch(seeds)
                observations = batch.reset(np.arange(len(seeds)), seeds)
            except Exception as error:
                raise self._fail(f"reset of {len(seeds)} environment(s)", error) from error
            batch_id, self._next_batch = self._next_batch, self._next_batch + 1
            self._batches[batch_id] = batch
            self._shapes[shape] = batch_id
            slots = np.arange(self._next_slot, self._next_slot + len(seeds))
            self._next_slot += len(seeds)
            for index, slot in enumerate(slots):
                self._slots[int(slot)] = (batch_id, index)
                self._steps[int(slot)] = 0
        observations = self._encode(observations)
        return slots.astype(np.int32).reshape(shape), observations.reshape(
            *shape, *observations.shape[1:]
        )

    def step(self, key_data: np.ndarray, slots: np.ndarray, actions: np.ndarray) -> tuple:
        """The callback of ``step``: keys ``[*B, 2]``, slots and actions ``[*B]`` -> observations,
        rewards, terminated, truncated and final observations, each ``[*B, ...]``. Where an
        episode ends, its environment starts the next one, seeded from the step's key."""
        shape = np.shape(slots)
        slots = np.asarray(slots).reshape(-1)
        actions = np.asarray(actions).reshape(-1) + self._action_start
        seeds = [_seed(k) for k in np.asarray(key_data).reshape(-1, 2)]
        unknown = [int(s) for s in slots if int(s) not in self._slots]
        if unknown:
            raise _failed(
                HostEnvError(
                    f"{self.name}: environment {unknown[0]} is not open in this process (its "
                    "state comes from another process or a replaced batch): reset it first"
                )
            )
        out = [None] * 5
        for batch_id in dict.fromkeys(self._slots[int(s)][0] for s in slots):
            rows = np.asarray([self._slots[int(s)][0] == batch_id for s in slots])
            indices = np.asarray([self._slots[int(s)][1] for s in slots[rows]])
            batch = self._batches[batch_id]
            try:
                raw, rewards, terminated, truncated = batch.step(indices, actions[rows])
            except EnvFailure as failure:
                position = int(np.flatnonzero(indices == failure.index)[0])
                slot = int(slots[rows][position])
                action = int(actions[rows][position]) - self._action_start
                what = f"step {self._steps[slot] + 1} of environment {slot} (action {action})"
                raise self._fail(what, failure.error) from failure.error
            except Exception as error:
                what = f"a step of environments {slots[rows].tolist()}"
                raise self._fail(what, error) from error
            final = self._encode(raw)
            terminated = np.asarray(terminated, bool)
            truncated = np.asarray(truncated, bool) & ~terminated
            done = terminated | truncated
            observation = final.copy()
            if done.any():
                ended = np.flatnonzero(done)
                try:
                    observation[ended] = self._encode(
                        batch.reset(indices[ended], [seeds[i] for i in np.flatnonzero(rows)[ended]])
                    )
                except Exception as error:
                    raise self._fail(
                        f"reset of environment(s) {slots[rows][ended].tolist()}", error
                    ) from error
            for slot, ended in zip(slots[rows], done, strict=True):
                self._steps[int(slot)] = 0 if ended else self._steps[int(slot)] + 1
            values = (observation, np.asarray(rewards, np.float32), terminated, truncated, final)
            for i, value in enumerate(values):
                if out[i] is None:
                    out[i] = np.zeros((len(slots), *value.shape[1:]), value.dtype)
                out[i][rows] = value
        return tuple(x.reshape(tuple(shape) + x.shape[1:]) for x in out)


def gymnasium_module():
    try:
        import gymnasium
    except ImportError as error:  # pragma: no cover - gymnasium is a dependency of gymnax
        raise ValueError(
            "gymnasium environments need the gymnasium package: pip install gymnasium"
        ) from error
    return gymnasium


def encoder(name: str, space: Any) -> tuple[tuple[int, ...], Any]:
    """The observation shape and the encoder (``[k, ...]`` observations to float32 ``[k,
    *shape]``) of a gymnasium observation space: a ``uint8`` Box (images) is scaled by 1/255 into
    [0, 1], any other Box is cast, a Discrete space is one-hot."""
    spaces = gymnasium_module().spaces
    if isinstance(space, spaces.Box):
        shape = tuple(int(n) for n in space.shape)
        if space.dtype == np.uint8:  # as the replay reads uint8 (mz_jax.training.replay.decode)
            scale = np.float32(1 / 255)
            return shape, lambda batch: np.asarray(batch, np.float32).reshape(-1, *shape) * scale
        return shape, lambda batch: np.asarray(batch, np.float32).reshape(-1, *shape)
    if isinstance(space, spaces.Discrete):
        n, start = int(space.n), int(space.start)
        eye = np.eye(n, dtype=np.float32)
        return (n,), lambda batch: eye[np.asarray(batch, np.int64).reshape(-1) - start]
    raise ValueError(
        f"{name}: its observation space {space} is not supported; allowed a Box (vectors and "
        "images) or a Discrete space (observed one-hot)"
    )


def check_actions(name: str, action_space: Any) -> None:
    if not isinstance(action_space, gymnasium_module().spaces.Discrete):
        raise ValueError(
            f"{name}: its action space {action_space} is not supported; allowed a Discrete "
            "space (continuous actions need Sampled MuZero, not yet in mz_jax)"
        )


def host_env(
    host: HostEnv,
    num_actions: int,
    observation_shape: tuple[int, ...],
    max_episode_steps: int | None,
    *,
    same_as_gymnax: str | None = None,
) -> Env:
    """The :class:`~mz_jax.envs.Env` whose ``reset`` and ``step`` call ``host`` back: a
    single-player environment of ``num_actions`` actions, all legal, observations float32
    ``observation_shape``; ``same_as_gymnax``: the gymnax id whose reward bound and mirror
    symmetry it takes (:data:`SAME_AS_GYMNAX`)."""
    from mz_jax.envs.gymnax_adapter import REFLECTIONS, REWARD_BOUNDS

    observation_type = jax.ShapeDtypeStruct(observation_shape, jnp.float32)
    scalar = lambda dtype: jax.ShapeDtypeStruct((), dtype)

    def timestep(observation, reward, terminated, truncated, final) -> TimeStep:
        return TimeStep(
            observation=observation,
            legal_action_mask=jnp.ones(num_actions, bool),
            player=jnp.int32(0),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            final_observation=final,
            final_player=jnp.int32(0),
        )

    def reset(key: jax.Array) -> tuple[EnvState, TimeStep]:
        slot, observation = jax.pure_callback(
            host.reset,
            (scalar(jnp.int32), observation_type),
            jax.random.key_data(key),
            vmap_method="broadcast_all",
        )
        no = jnp.bool_(False)
        return EnvState(backend=slot, episode_step=jnp.int32(0)), timestep(
            observation, jnp.float32(0.0), no, no, observation
        )

    def step(key: jax.Array, state: EnvState, action: jax.Array) -> tuple[EnvState, TimeStep]:
        observation, reward, terminated, truncated, final = jax.pure_callback(
            host.step,
            (observation_type, scalar(jnp.float32), scalar(bool), scalar(bool), observation_type),
            jax.random.key_data(key),
            state.backend,
            jnp.asarray(action, jnp.int32),
            vmap_method="broadcast_all",
        )
        done = terminated | truncated
        episode_step = jnp.where(done, 0, state.episode_step + 1).astype(jnp.int32)
        return EnvState(backend=state.backend, episode_step=episode_step), timestep(
            observation, reward, terminated, truncated, final
        )

    return Env(
        name=host.name,
        num_actions=num_actions,
        observation_shape=observation_shape,
        num_players=1,
        max_episode_steps=max_episode_steps,
        reward_bound=REWARD_BOUNDS[same_as_gymnax] if same_as_gymnax else None,
        reflection=REFLECTIONS.get(same_as_gymnax) if same_as_gymnax else None,
        reset=reset,
        step=step,
        host=host,
    )
