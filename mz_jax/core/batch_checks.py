"""Checks of a :class:`mz_jax.types.Batch` before the loss uses it, each naming the field at fault.

:func:`check_batch` checks every field's shape and dtype (at trace time, so under ``jit`` too) and,
where the values are concrete, that the actions lie in ``[0, A)``; :func:`check_num_actions` checks
that the network's A is the batch's. :func:`mz_jax.core.loss.make_loss_fn` calls both.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.types import Array, Batch

_FLOAT = ("floating", (jnp.floating,))
_NUMBER = ("bool, integer or floating", (jnp.bool_, jnp.integer, jnp.floating))

# Each field of a Batch: its shape in words, its rank (None: at least 1), and the dtypes it may have.
_FIELDS = {
    "observation": ("[B, ...]", None, _NUMBER),
    "actions": ("[B, K]", 2, ("integer", (jnp.integer,))),
    "target_value": ("[B, K+1]", 2, _FLOAT),
    "target_reward": ("[B, K+1]", 2, _FLOAT),
    "target_policy": ("[B, K+1, A]", 3, _FLOAT),
    "mask": ("[B, K+1]", 2, _NUMBER),
    "weight": ("[B]", 1, _NUMBER),
    "reward_mask": ("[B, K+1]", 2, _NUMBER),
    "next_observation": ("[B, K, ...]", None, _NUMBER),
    "observation_mask": ("[B, K]", 2, _NUMBER),
    "target_same_player": ("[B, K]", 2, _NUMBER),
}
_OPTIONAL = ("reward_mask", "next_observation", "observation_mask", "target_same_player")
# How each field's second axis gives K (its length minus this); the unroll length is the value
# most fields agree on, so that the one field that disagrees is the one named.
_K_OFFSET = {"actions": 0, "target_value": 1, "target_reward": 1, "target_policy": 1, "mask": 1}


def _most_common(values: list[int]) -> int:
    """The most frequent of ``values``; a tie goes to the one listed first."""
    return max(values, key=lambda v: (values.count(v), -values.index(v)))


def check_batch(batch: Batch, *, num_actions: int | None = None) -> None:
    """Checks the shapes, dtypes and (where the values are known) actions of a :class:`Batch`.

    Every error names the field at fault, its expected and actual shape or dtype. B and K are the
    sizes most fields agree on, so an ``actions`` of shape ``[B, K+1]`` is reported as
    ``batch.actions``, not as every other field. The shapes and dtypes are checked at trace time
    (under ``jit`` too). The range ``0 <= actions < A`` (A: ``num_actions``, default the last axis
    of ``target_policy``) is checked only when ``batch.actions`` holds concrete values (called
    eagerly, or under ``jax.grad`` of the parameters); under ``jit`` or ``vmap`` the values are
    unknown and unchecked: the mz_jax networks then encode an out-of-range action as an all-zero
    one-hot (no action at all), so check data from elsewhere before jitting.

    Raises:
      ValueError: naming the field, what it must be and what it is.
    """
    for name, (spec, rank, (kinds, dtypes)) in _FIELDS.items():
        field = getattr(batch, name)
        if field is None and name in _OPTIONAL:
            continue
        if not hasattr(field, "shape") or not hasattr(field, "dtype"):
            raise ValueError(f"batch.{name} must be an array {spec}; got {type(field).__name__}")
        rank_ok = field.ndim >= 1 if rank is None else field.ndim == rank
        if not rank_ok:
            raise ValueError(f"batch.{name} must have shape {spec}; got shape {field.shape}")
        if not any(jnp.issubdtype(field.dtype, dtype) for dtype in dtypes):
            raise ValueError(f"batch.{name} must be {kinds}; got dtype {field.dtype}")
    present = [name for name in _FIELDS if getattr(batch, name) is not None]
    b = _most_common([getattr(batch, name).shape[0] for name in present])
    k = _most_common([getattr(batch, name).shape[1] - off for name, off in _K_OFFSET.items()])
    if k < 1:
        raise ValueError(
            f"the unroll length K = batch.actions.shape[1] must be >= 1; got {k} "
            f"(batch.actions has shape {batch.actions.shape})"
        )
    a = batch.target_policy.shape[2]
    obs = tuple(batch.observation.shape[1:])
    expected = {
        "observation": (f"[B, ...] = ({b}, ...)", (b, *obs)),
        "actions": (f"[B, K] = ({b}, {k})", (b, k)),
        "target_value": (f"[B, K+1] = ({b}, {k + 1})", (b, k + 1)),
        "target_reward": (f"[B, K+1] = ({b}, {k + 1})", (b, k + 1)),
        "target_policy": (f"[B, K+1, A] = ({b}, {k + 1}, A)", (b, k + 1, a)),
        "mask": (f"[B, K+1] = ({b}, {k + 1})", (b, k + 1)),
        "weight": (f"[B] = ({b},)", (b,)),
        "reward_mask": (f"[B, K+1] = ({b}, {k + 1})", (b, k + 1)),
        "next_observation": (f"[B, K, *observation] = {(b, k, *obs)}", (b, k, *obs)),
        "observation_mask": (f"[B, K] = ({b}, {k})", (b, k)),
        "target_same_player": (f"[B, K] = ({b}, {k})", (b, k)),
    }
    for name in present:
        spec, shape = expected[name]
        if tuple(getattr(batch, name).shape) != shape:
            raise ValueError(
                f"batch.{name} must have shape {spec} (B = {b} and K = {k} as most fields "
                f"have them); got {tuple(getattr(batch, name).shape)}"
            )
    if num_actions is not None and a != num_actions:
        raise ValueError(
            f"batch.target_policy must have shape [B, K+1, A] with A = {num_actions} actions; "
            f"got {a} on its last axis (shape {batch.target_policy.shape})"
        )
    _check_action_range(batch.actions, a if num_actions is None else num_actions)


def _check_action_range(actions: Array, num_actions: int) -> None:
    """Raises if concrete ``actions`` fall outside ``[0, num_actions)``; a traced one is skipped."""
    if isinstance(actions, jax.core.Tracer):
        return
    values = np.asarray(actions)
    bad = np.argwhere((values < 0) | (values >= num_actions))
    if bad.size:
        first = tuple(int(i) for i in bad[0])
        raise ValueError(
            f"batch.actions must be in [0, A) = [0, {num_actions}); got {int(values[first])} at "
            f"{list(first)} ({len(bad)} value(s) out of range)"
        )


def check_num_actions(policy_logits: Array, target_policy: Array) -> None:
    """The network's A (its policy logits' last axis) must be the batch's (target_policy's)."""
    network_actions, batch_actions = policy_logits.shape[-1], target_policy.shape[-1]
    if network_actions != batch_actions:
        raise ValueError(
            f"batch.target_policy has A = {batch_actions} actions on its last axis, but the "
            f"network's policy logits have {network_actions}: batch.target_policy must be "
            f"[B, K+1, {network_actions}]"
        )
