"""On-device prioritized sequence replay over time-major environment streams.

The replay keeps the self-play data of E environment streams as one :class:`~mz_jax.types.Trajectory`
with leading axes ``[L, E]``: a ring buffer of L time slots per stream, written a rollout ``[T, E]`` at a
time, so the capacity in transitions is ``L * E``. Training samples windows of W consecutive time steps
of one stream, with probability proportional to the priority of the window's first step raised to α
(prioritized experience replay, Schaul et al. 2016, Section 3.3; MuZero, Schrittwieser et al. 2020,
Appendix G, samples positions with priority ``|ν − z|^α``), and corrects the bias with importance
weights ``(N · P(i))^(−β)`` normalised by their maximum.

A window may span an episode boundary (the streams reset automatically; the target builder reads the
``terminated``/``truncated`` flags), but it never mixes data of different write times out of order:
only starts whose whole window lies in written, chronologically contiguous data are sampled. Every
stream is written in lockstep, so which starts are valid depends on the time slot only.

Everything is a pure function of a :class:`ReplayState` of arrays and jits with static sizes. Under
``jax.shard_map`` each device holds its own replay of its own environments (shard ``data`` and
``priority`` along the environment axis); pass ``axis_name`` to :func:`update_priorities` to keep the
scalar fields identical on every device.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from mz_jax.types import Array, Trajectory

_PRIORITY_DTYPE = jnp.float32
PIXEL_SCALE = np.float32(1 / 255)
"""An 8-bit pixel's step in [0, 1] as float32 (images are scaled by multiplying with it)."""
_PRIORITY_BYTES = np.dtype(np.float32).itemsize


class ReplayState(NamedTuple):
    """The replay's contents and bookkeeping.

    Attributes:
      data: a :class:`Trajectory` whose leaves have leading axes ``[L, E]``; time slot ``t`` of stream
        ``e`` is row ``[t, e]``.
      priority: ``[L, E]`` float32, positive; the priority of the window that starts at that slot.
      write_index: int32 scalar in ``[0, L)``, the slot the next written time step goes to.
      num_written: int32 scalar in ``[0, L]``, how many slots hold data (saturates at L). The written
        slots, oldest first, are ``write_index - num_written, ..., write_index - 1`` (mod L).
      max_priority: float32 scalar, the largest priority seen so far; new data enters with it, so that
        every new position is sampled at least once soon (Schaul et al. 2016, Algorithm 1).
    """

    data: Trajectory
    priority: Array
    write_index: Array
    num_written: Array
    max_priority: Array


class ReplayIndex(NamedTuple):
    """Where sampled windows start, to hand back to :func:`update_priorities`.

    Attributes:
      time: ``[B]`` int32 time slot in ``[0, L)`` of each window's first step.
      env: ``[B]`` int32 environment stream in ``[0, E)``.
    """

    time: Array
    env: Array


def _ring_length(state: ReplayState) -> int:
    return state.priority.shape[0]


def init(
    example: Trajectory, *, capacity: int, num_envs: int, initial_priority: float = 1.0
) -> ReplayState:
    """An empty replay for ``num_envs`` streams of ``L = capacity // num_envs`` time slots each.

    Args:
      example: one transition of one environment, without leading axes (``observation`` of shape
        ``obs_shape``, ``action`` a scalar, ...). Only shapes and dtypes are read, so arrays or
        ``jax.ShapeDtypeStruct`` leaves both work, e.g. ``jax.tree.map(lambda x: x[0, 0], rollout)``.
      capacity: transitions to hold in total; rounded down to a multiple of ``num_envs``.
      num_envs: E, the number of environment streams written by each :func:`add`.
      initial_priority: the ``max_priority`` new data enters with until a larger priority is seen.

    Returns:
      A :class:`ReplayState` with zero-filled ``data`` of leading axes ``[L, E]``.
    """
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}.")
    if capacity < num_envs:
        raise ValueError(
            f"capacity must be >= num_envs={num_envs} (at least one time slot per stream), "
            f"got {capacity}."
        )
    if not initial_priority > 0:
        raise ValueError(f"initial_priority must be > 0, got {initial_priority}.")
    length = capacity // num_envs
    data = jax.tree.map(
        lambda x: jnp.zeros((length, num_envs, *np.shape(x)), dtype=x.dtype), example
    )
    return ReplayState(
        data=data,
        priority=jnp.full((length, num_envs), initial_priority, _PRIORITY_DTYPE),
        write_index=jnp.zeros((), jnp.int32),
        num_written=jnp.zeros((), jnp.int32),
        max_priority=jnp.asarray(initial_priority, _PRIORITY_DTYPE),
    )


def add(state: ReplayState, rollout: Trajectory) -> ReplayState:
    """Writes a rollout of T time steps of all E streams at the write head, overwriting the oldest.

    The new slots get priority ``state.max_priority``.

    Args:
      state: the replay.
      rollout: a :class:`Trajectory` with leading axes ``[T, E]``, ``1 <= T <= L``; its leaves are
        stored in the replay's dtypes (:func:`encode`).

    Returns:
      The replay with ``write_index`` advanced by T (mod L) and ``num_written`` by T (up to L).
    """
    length, num_envs = state.priority.shape
    steps = jax.tree.leaves(rollout)[0].shape[0]
    if not 1 <= steps <= length:
        raise ValueError(
            f"rollout must have between 1 and L={length} time steps, got T={steps}; "
            "a longer rollout would overwrite itself."
        )

    for name, stored, new in zip(Trajectory._fields, state.data, rollout, strict=True):
        if new.shape != (steps, *stored.shape[1:]):
            raise ValueError(
                f"rollout.{name} must have shape {(steps, *stored.shape[1:])} "
                f"([T, E={num_envs}, ...]), got {new.shape}."
            )

    slots = (state.write_index + jnp.arange(steps, dtype=jnp.int32)) % length
    data = jax.tree.map(
        lambda stored, new: stored.at[slots].set(encode(new, stored.dtype)), state.data, rollout
    )
    priority = state.priority.at[slots].set(state.max_priority)
    return state._replace(
        data=data,
        priority=priority,
        write_index=(state.write_index + steps) % length,
        num_written=jnp.minimum(state.num_written + steps, length),
    )


def _check_window_length(state: ReplayState, window_length: int) -> None:
    length = _ring_length(state)
    if not 1 <= window_length <= length:
        raise ValueError(
            f"window_length must be between 1 and L={length} (time slots per stream), "
            f"got {window_length}."
        )


def _check_written_rows(window_length: int, written_rows: int | None) -> int:
    if written_rows is None:
        return window_length
    if not 1 <= written_rows <= window_length:
        raise ValueError(
            f"written_rows must be between 1 and window_length={window_length}, got {written_rows}."
        )
    return written_rows


def valid_starts(
    state: ReplayState, *, window_length: int, written_rows: int | None = None
) -> Array:
    """``[L, E]`` bool: the slots where a window of ``window_length`` chronologically contiguous
    steps starts whose first ``written_rows`` steps (default: all) are written. The most recent
    ``written_rows - 1`` steps of each stream are not (yet) valid starts; the rows of a window past
    the newest step hold older data or zeros, for the caller to mask."""
    _check_window_length(state, window_length)
    required = _check_written_rows(window_length, written_rows)
    length, num_envs = state.priority.shape
    oldest = (state.write_index - state.num_written) % length
    age_rank = (jnp.arange(length, dtype=jnp.int32) - oldest) % length  # 0 for the oldest slot
    valid = age_rank + required <= state.num_written
    return jnp.broadcast_to(valid[:, None], (length, num_envs))


def can_sample(state: ReplayState, *, window_length: int, written_rows: int | None = None) -> Array:
    """Bool scalar: whether at least one window can be sampled (:func:`valid_starts`)."""
    _check_window_length(state, window_length)
    return state.num_written >= _check_written_rows(window_length, written_rows)


def slots_since(state: ReplayState, index: ReplayIndex) -> Array:
    """``[B]``: the time slots written after each sampled window's start; 0 for the newest."""
    return (state.write_index - 1 - index.time) % state.priority.shape[0]


def written_rows_of(state: ReplayState, index: ReplayIndex, *, window_length: int) -> Array:
    """``[B]`` int32: how many rows of each sampled window (from its start) are written, at most
    ``window_length``; the newest time slot's window has 1."""
    return jnp.minimum(slots_since(state, index) + 1, window_length).astype(jnp.int32)


class _StartPriorities(NamedTuple):
    log_priority: Array  # [L, E]
    valid: Array  # [L, E] bool
    log_max: Array  # scalar, over valid starts; 0 where none is valid (so no inf - inf appears)


def _start_priorities(
    state: ReplayState, window_length: int, written_rows: int | None = None
) -> _StartPriorities:
    valid = valid_starts(state, window_length=window_length, written_rows=written_rows)
    log_priority = jnp.log(state.priority)
    any_valid = jnp.any(valid)
    log_max = jnp.where(any_valid, jnp.max(jnp.where(valid, log_priority, -jnp.inf)), 0.0)
    return _StartPriorities(log_priority, valid, log_max)


def _sampling_mass(starts: _StartPriorities, alpha: float | Array) -> Array:
    """``[L, E]`` float32 ``(p / p_max)^α`` at valid starts, exactly 0 elsewhere (also for α = 0,
    where ``0**0 == 1`` would otherwise make invalid starts sampleable)."""
    # Scaling by the largest valid priority keeps every value in (0, 1]: no overflow for large α.
    return jnp.where(starts.valid, jnp.exp(alpha * (starts.log_priority - starts.log_max)), 0.0)


def probabilities(state: ReplayState, *, window_length: int, alpha: float | Array = 1.0) -> Array:
    """``[L, E]`` float32 sampling distribution ``P(i) = p_i^α / Σ_valid p^α`` over window starts
    (0 at invalid starts; all zeros when no start is valid). For metrics and tests."""
    mass = _sampling_mass(_start_priorities(state, window_length), alpha)
    total = jnp.sum(mass)
    return jnp.where(total > 0, mass / jnp.where(total > 0, total, 1.0), 0.0)


def _search(key: Array, cdf: Array, num_samples: int) -> Array:
    """Inverse-CDF draws: ``[num_samples]`` indices into the last axis of ``cdf`` (``[M]`` shared, or
    ``[num_samples, M]`` one per draw), each the first index whose cdf exceeds a uniform draw on
    ``[0, total)``. Zero-mass entries are never returned while the total is positive."""
    total = cdf[..., -1]
    u = jax.random.uniform(key, (num_samples,), jnp.float32) * total
    # ``u * total`` may round up to ``total`` itself, which no entry exceeds.
    u = jnp.minimum(u, jnp.nextafter(total, jnp.zeros_like(total)))
    index = jnp.sum(cdf <= u[:, None], axis=-1, dtype=jnp.int32)
    return jnp.minimum(index, cdf.shape[-1] - 1)


def _sample_flat(key: Array, mass: Array, num_samples: int) -> Array:
    """``[num_samples]`` indices drawn with replacement in proportion to the flat ``mass[N]``.

    Two levels (a block of about √N entries, then an entry within it) rather than one cumulative sum
    over all N: near its end a float32 cumsum over N ~ 1e6 entries of mass <= 1 is spaced ~0.06, so a
    smaller entry's share would be rounded to 0 or to that spacing. Costs ``O(N + num_samples · √N)`` and no
    ``[num_samples, N]`` array, unlike Gumbel-max sampling with ``jax.random.categorical``.
    """
    (size,) = mass.shape
    block = math.isqrt(size - 1) + 1 if size > 1 else 1  # ceil(sqrt(size))
    num_blocks = -(-size // block)
    blocks = jnp.pad(mass, (0, num_blocks * block - size)).reshape(num_blocks, block)
    block_key, entry_key = jax.random.split(key)
    block_index = _search(block_key, jnp.cumsum(jnp.sum(blocks, axis=1)), num_samples)
    entry_index = _search(entry_key, jnp.cumsum(blocks[block_index], axis=1), num_samples)
    return block_index * block + entry_index


def sample(
    state: ReplayState,
    key: Array,
    *,
    batch_size: int,
    window_length: int,
    alpha: float | Array = 1.0,
    beta: float | Array = 1.0,
    written_rows: int | None = None,
) -> tuple[Trajectory, ReplayIndex, Array]:
    """Samples B windows of W consecutive steps, with replacement, by prioritized replay.

    Window i (a valid start: see :func:`valid_starts`) is drawn with probability
    ``P(i) = p_i^α / Σ_valid p^α``; α = 0 is uniform over valid starts. Its importance weight is
    ``w_i = (N · P(i))^(−β) / max_{j in batch} (N · P(j))^(−β)``, N the number of valid starts, which
    is ``(p_i / p_min)^(−αβ)`` with ``p_min`` the smallest priority in the batch, so
    ``0 < w_i <= 1`` (Schaul et al. 2016, Section 3.4). Like Acme (its prioritized DQN losses divide
    by ``jnp.max(importance_weights)``) and EfficientZero (``weights_lst /= weights_lst.max()`` in
    ``core/replay_buffer.py``), this normalises by the largest weight in the batch, not by the
    largest in the buffer; that matters: one well-fitted start with a near-zero priority anywhere in
    the buffer would otherwise scale every other example's loss down by orders of magnitude, and the
    update would be dominated by the data that needs it least.

    Args:
      state: the replay; check :func:`can_sample` first. With no valid start the windows and indices
        are arbitrary and the weights are all 0.
      key: a PRNG key.
      batch_size: B, a static Python int.
      window_length: W, a static Python int in ``[1, L]``.
      alpha: priority exponent α >= 0; may be traced.
      beta: importance-sampling exponent β in ``[0, 1]``; may be traced.
      written_rows: None, or how many rows of a window, from its start, must be written for it to
        be sampled (:func:`valid_starts`; :func:`written_rows_of` tells each window's).

    Returns:
      ``(windows, indices, weights)``: a :class:`Trajectory` with leading axes ``[B, W]`` (row w of
      window b is time step ``indices.time[b] + w`` (mod L) of stream ``indices.env[b]``), the
      :class:`ReplayIndex` of the starts, and ``[B]`` float32 importance weights.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}.")
    _check_window_length(state, window_length)
    if isinstance(alpha, (int, float)) and not alpha >= 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}.")
    if isinstance(beta, (int, float)) and not 0 <= beta <= 1:
        raise ValueError(f"beta must be in [0, 1], got {beta}.")
    length, num_envs = state.priority.shape

    starts = _start_priorities(state, window_length, written_rows)
    flat = _sample_flat(key, _sampling_mass(starts, alpha).reshape(-1), batch_size)
    time, env = flat // num_envs, flat % num_envs

    rows = (time[:, None] + jnp.arange(window_length, dtype=jnp.int32)) % length  # [B, W]
    windows = jax.tree.map(lambda x: decode(x[rows, env[:, None]]), state.data)

    # N and Σ p^α cancel in the normalised weight: the largest belongs to the smallest priority drawn.
    log_priority = starts.log_priority[time, env]
    weights = jnp.exp(-beta * alpha * (log_priority - jnp.min(log_priority)))
    weights = jnp.where(jnp.any(starts.valid), weights, 0.0).astype(jnp.float32)
    return windows, ReplayIndex(time=time, env=env), weights


def update_priorities(
    state: ReplayState,
    indices: ReplayIndex,
    priorities: Array,
    *,
    epsilon: float = 1e-6,
    axis_name: Any | None = None,
) -> ReplayState:
    """Sets the priorities of sampled window starts and raises ``max_priority`` to cover them.

    Call it before the next :func:`add`: an index refers to a slot, which ``add`` may overwrite.

    Args:
      state: the replay.
      indices: the :class:`ReplayIndex` returned by :func:`sample` (``[B]`` time slots and streams).
      priorities: ``[B]`` new priorities, e.g. ``|ν − z|`` of the loss. Stored as ``|priority| +
        epsilon``, so that no start is starved; a non-finite priority is replaced by
        ``max_priority`` rather than poisoning the sampling distribution. Where a start appears more
        than once in the batch, one of its priorities is kept.
      epsilon: added to every priority; must be > 0.
      axis_name: under ``shard_map``/``pmap``, the mapped axis to take ``max_priority``'s maximum
        over, so it stays identical on every device; None for a single replay.

    Returns:
      The replay with the new priorities.
    """
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0, got {epsilon}.")
    if priorities.shape != indices.time.shape:
        raise ValueError(
            f"priorities must have shape {indices.time.shape} (one per sampled window), "
            f"got {priorities.shape}."
        )
    priorities = jnp.abs(priorities.astype(_PRIORITY_DTYPE)) + epsilon
    priorities = jnp.where(jnp.isfinite(priorities), priorities, state.max_priority)
    max_priority = jnp.maximum(state.max_priority, jnp.max(priorities))
    if axis_name is not None:
        max_priority = jax.lax.pmax(max_priority, axis_name)
    return state._replace(
        priority=state.priority.at[indices.time, indices.env].set(priorities),
        max_priority=max_priority,
    )


def encode(value: Array, dtype: Any) -> Array:
    """``value`` as the replay stores it in ``dtype``: a float stored as uint8 is ``round(255 *
    clip(value, 0, 1))`` (exact for an image scaled from 8-bit pixels, ``k * PIXEL_SCALE``); any
    other is cast."""
    if np.dtype(dtype) == np.uint8 and jnp.issubdtype(value.dtype, jnp.floating):
        return jnp.round(jnp.clip(value, 0.0, 1.0) * 255.0).astype(jnp.uint8)
    return value.astype(dtype)


def decode(stored: Array) -> Array:
    """A stored leaf as the learner reads it: uint8 as float32 ``stored * float32(1 / 255)`` (the
    inverse of :func:`encode`, and how the Python environments scale 8-bit images, so those
    read back bit for bit), any other as it is."""
    if stored.dtype == jnp.uint8:
        return stored.astype(jnp.float32) * PIXEL_SCALE
    return stored


def bytes_per_transition(example: Trajectory) -> int:
    """Memory of one stored transition in bytes: its data plus its float32 priority.

    Args:
      example: one transition of one environment, as given to :func:`init`.
    """
    data_bytes = sum(
        math.prod(np.shape(x)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(example)
    )
    return int(data_bytes) + _PRIORITY_BYTES


def partition_specs(state: ReplayState, axis_name: str) -> ReplayState:
    """How a replay state is laid out over the mesh axis ``axis_name``: the data and priorities
    split along the environment axis (each device keeps its own environments' streams), the
    counters replicated."""
    return ReplayState(
        data=jax.tree.map(lambda _: P(None, axis_name), state.data),
        priority=P(None, axis_name),
        write_index=P(),
        num_written=P(),
        max_priority=P(),
    )
