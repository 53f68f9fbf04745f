"""Python environments as :class:`~mz_jax.envs.Env`: gymnasium's, stepped on the host.

``make_env("gymnasium:CartPole-v1")`` (any id gymnasium's registry holds, and its ``module:EnvId``
form, ``"gymnasium:my_envs:Corridor-v0"``, where importing ``my_envs`` registers ``Corridor-v0``)
gives an :class:`~mz_jax.envs.Env` whose ``reset`` and ``step`` are ``jax.pure_callback`` calls
into Python: the compiled programs (self-play under ``lax.scan``, the evaluation's loop, several
seeds under ``vmap``, the devices under ``shard_map``) call back to the host once per step for the
whole batch of environments they step, and everything else (the search, the replay, the learner)
stays compiled.

What the callbacks keep on the host: each :class:`HostEnv` owns its environments, one gymnasium
environment per *slot*. ``reset`` over a batch of keys (``vmap(env.reset)(keys)``, any number of
leading batch axes) makes one slot per key, seeded from the key, and returns the slot ids as the
environments' state (``EnvState.backend``, int32); a later reset over a batch of the same shape
closes the slots the previous one made, so an evaluation that resets its environments each time
reuses the memory. ``step`` steps each slot with its action and, where the episode ends, resets
it (seeded from the step's key) and returns the first observation of the next episode, with the
observation the step reached in ``final_observation`` (the automatic reset of the JAX
environments). The slots are not saved in a checkpoint: a resumed run starts new episodes
(:func:`mz_jax.run.start.start_run`).

Supported spaces: a ``Discrete`` action space (``start`` offsets the actions); a ``Box``
observation (vectors and images, cast to float32) or a ``Discrete`` one (one-hot). A gymnasium
time limit (``max_episode_steps`` of the spec or the argument) truncates episodes. The ids of
:data:`SAME_AS_GYMNAX` take the reward bound and the mirror symmetry of the gymnax environment of
the same id; any other has no reward bound (None) and no mirror symmetry.

A failure inside the environment's ``step`` or ``reset`` is raised as :class:`HostEnvError`, whose
message names the environment, the slot and the step; the compiled program that called it fails
with that message.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.envs.base import Env, EnvState, TimeStep

GYMNASIUM_PREFIX = "gymnasium:"
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


class HostEnv:
    """The host side of one :class:`~mz_jax.envs.Env` made by :func:`make_gymnasium`: its slots.

    Args:
      name: the environment's name, for messages.
      make: ``make() -> gymnasium.Env``, a new environment.
      encode: ``encode(observation) -> np.ndarray`` float32 of the observation shape.
      action_start: added to an action before it is given to the environment.
    """

    def __init__(self, name: str, make, encode, action_start: int):
        self.name = name
        self._make = make
        self._encode = encode
        self._action_start = action_start
        self._slots: dict[int, Any] = {}
        self._steps: dict[int, int] = {}
        self._groups: dict[tuple[int, ...], list[int]] = {}
        self._next_slot = 0
        self._lock = threading.Lock()

    @property
    def num_slots(self) -> int:
        """Environments open now."""
        return len(self._slots)

    def environment(self, slot: int) -> Any:
        """The gymnasium environment of ``slot`` (for tests and inspection)."""
        return self._slots[int(slot)]

    def close(self) -> None:
        """Closes every environment."""
        with self._lock:
            for slot in list(self._slots):
                self._close_slot(slot)
            self._groups.clear()

    def _close_slot(self, slot: int) -> None:
        env = self._slots.pop(slot, None)
        self._steps.pop(slot, None)
        if env is not None:
            try:
                env.close()
            except Exception:  # closing is best effort
                pass

    def _reset_slot(self, slot: int, seed: int) -> np.ndarray:
        try:
            observation, _ = self._slots[slot].reset(seed=seed)
        except Exception as error:
            raise _failed(
                HostEnvError(
                    f"{self.name}: reset of environment {slot} raised {type(error).__name__}: "
                    f"{error}"
                )
            ) from error
        self._steps[slot] = 0
        return self._encode(observation)

    def reset(self, key_data: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The callback of ``reset``: ``key_data [*B, 2]`` -> (slots ``[*B]``, observations)."""
        key_data = np.asarray(key_data)
        batch = key_data.shape[:-1]
        flat = key_data.reshape(-1, key_data.shape[-1])
        with self._lock:
            for slot in self._groups.pop(batch, []):
                self._close_slot(slot)
            slots = list(range(self._next_slot, self._next_slot + len(flat)))
            self._next_slot += len(flat)
            self._groups[batch] = slots
            for slot in slots:
                self._slots[slot] = self._make()
        observations = [self._reset_slot(s, _seed(k)) for s, k in zip(slots, flat, strict=True)]
        return (
            np.asarray(slots, np.int32).reshape(batch),
            np.stack(observations).reshape(*batch, *observations[0].shape),
        )

    def step(self, key_data: np.ndarray, slots: np.ndarray, actions: np.ndarray) -> tuple:
        """The callback of ``step``: keys ``[*B, 2]``, slots and actions ``[*B]`` -> observations,
        rewards, terminated, truncated and final observations, each ``[*B, ...]``."""
        slots = np.asarray(slots)
        batch = slots.shape
        flat_keys = np.asarray(key_data).reshape(-1, 2)
        flat_actions = np.asarray(actions).reshape(-1)
        rows = []
        for slot, action, key in zip(slots.reshape(-1), flat_actions, flat_keys, strict=True):
            slot = int(slot)
            env = self._slots.get(slot)
            if env is None:
                raise _failed(
                    HostEnvError(
                        f"{self.name}: environment {slot} is not open in this process (its state "
                        "comes from another process or a closed batch): reset it first"
                    )
                )
            step = self._steps[slot]
            try:
                observation, reward, terminated, truncated, _ = env.step(
                    int(action) + self._action_start
                )
            except Exception as error:
                raise _failed(
                    HostEnvError(
                        f"{self.name}: step {step + 1} of environment {slot} (action "
                        f"{int(action)}) raised {type(error).__name__}: {error}"
                    )
                ) from error
            self._steps[slot] = step + 1
            final = self._encode(observation)
            done = bool(terminated) or bool(truncated)
            observation = self._reset_slot(slot, _seed(key)) if done else final
            rows.append((observation, float(reward), bool(terminated), bool(truncated), final))
        observations, rewards, terminated, truncated, finals = zip(*rows, strict=True)
        shape = rows[0][0].shape
        return (
            np.stack(observations).reshape(*batch, *shape).astype(np.float32),
            np.asarray(rewards, np.float32).reshape(batch),
            np.asarray(terminated, np.bool_).reshape(batch),
            np.asarray(truncated, np.bool_).reshape(batch) & ~np.asarray(terminated).reshape(batch),
            np.stack(finals).reshape(*batch, *shape).astype(np.float32),
        )


def _gymnasium():
    try:
        import gymnasium
    except ImportError as error:  # pragma: no cover - gymnasium is a dependency of gymnax
        raise ValueError(
            "gymnasium environments need the gymnasium package: pip install gymnasium"
        ) from error
    return gymnasium


def _encoder(name: str, space: Any) -> tuple[tuple[int, ...], Any]:
    """The observation shape and the encoder of a gymnasium observation space."""
    spaces = _gymnasium().spaces
    if isinstance(space, spaces.Box):
        shape = tuple(int(n) for n in space.shape)
        return shape, lambda observation: np.asarray(observation, np.float32).reshape(shape)
    if isinstance(space, spaces.Discrete):
        n, start = int(space.n), int(space.start)
        return (n,), lambda observation: np.eye(n, dtype=np.float32)[int(observation) - start]
    raise ValueError(
        f"{name}: its observation space {space} is not supported; allowed a Box (vectors and "
        "images) or a Discrete space (observed one-hot)"
    )


def _make_function(name: str, env_id: str, max_episode_steps: int | None, kwargs: dict):
    gymnasium = _gymnasium()
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
    """The gymnasium environment ``env_id`` as an :class:`~mz_jax.envs.Env` stepped on the host.

    Args:
      env_id: an id of gymnasium's registry, or ``module:EnvId``.
      max_episode_steps: a time limit in transitions (gymnasium's ``TimeLimit``); None keeps the
        registered one.
      kwargs: passed to ``gymnasium.make``.

    Raises:
      ValueError: an id gymnasium does not know, a module that fails to import, or a space the
        agent cannot drive, naming the environment and what is supported.
    """
    from mz_jax.envs.gymnax_adapter import REFLECTIONS, REWARD_BOUNDS

    name = GYMNASIUM_PREFIX + env_id
    make, probe = _make_function(name, env_id, max_episode_steps, kwargs or {})
    try:
        spaces = _gymnasium().spaces
        action_space = probe.action_space
        if not isinstance(action_space, spaces.Discrete):
            raise ValueError(
                f"{name}: its action space {action_space} is not supported; allowed a Discrete "
                "space (continuous actions need Sampled MuZero, not yet in mz_jax)"
            )
        observation_shape, encode = _encoder(name, probe.observation_space)
        limit = probe.spec.max_episode_steps if probe.spec is not None else None
    finally:
        probe.close()
    num_actions = int(action_space.n)
    host = HostEnv(name, make, encode, int(action_space.start))
    same = env_id in SAME_AS_GYMNAX and not kwargs

    def reset(key: jax.Array) -> tuple[EnvState, TimeStep]:
        slot, observation = jax.pure_callback(
            host.reset,
            (
                jax.ShapeDtypeStruct((), jnp.int32),
                jax.ShapeDtypeStruct(observation_shape, jnp.float32),
            ),
            jax.random.key_data(key),
            vmap_method="broadcast_all",
        )
        return EnvState(backend=slot, episode_step=jnp.int32(0)), TimeStep(
            observation=observation,
            legal_action_mask=jnp.ones(num_actions, bool),
            player=jnp.int32(0),
            reward=jnp.float32(0.0),
            terminated=jnp.bool_(False),
            truncated=jnp.bool_(False),
            final_observation=observation,
            final_player=jnp.int32(0),
        )

    def step(key: jax.Array, state: EnvState, action: jax.Array) -> tuple[EnvState, TimeStep]:
        observation_type = jax.ShapeDtypeStruct(observation_shape, jnp.float32)
        scalar = lambda dtype: jax.ShapeDtypeStruct((), dtype)
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
        return EnvState(backend=state.backend, episode_step=episode_step), TimeStep(
            observation=observation,
            legal_action_mask=jnp.ones(num_actions, bool),
            player=jnp.int32(0),
            reward=reward,
            terminated=terminated,
            truncated=truncated,
            final_observation=final,
            final_player=jnp.int32(0),
        )

    env = Env(
        name=name,
        num_actions=num_actions,
        observation_shape=observation_shape,
        num_players=1,
        max_episode_steps=limit,
        reward_bound=REWARD_BOUNDS[env_id] if same else None,
        reflection=REFLECTIONS.get(env_id) if same else None,
        reset=reset,
        step=step,
        host=host,
    )
    return env
