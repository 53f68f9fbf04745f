"""The learner: training state, optimiser, and the per-device update with gradients averaged over 'data'.

The update is written for one device and averages gradients with ``lax.pmean`` over the mesh axis
``'data'``; :mod:`mz_jax.train` wraps the whole per-device iteration in ``jax.shard_map`` (or
``jax.pmap``, which gives the same result).
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import optax

from mz_jax.loss import LossAux, LossFn
from mz_jax.types import Array, Batch, Params

AXIS = "data"


class TrainState(NamedTuple):
    """What the learner carries between updates (replicated over devices).

    Attributes:
      params: the network parameters.
      opt_state: the optimiser state (including ``apply_if_finite``'s counters of skipped updates).
      step: int32, updates applied or skipped so far.
    """

    params: Params
    opt_state: optax.OptState
    step: Array


class UpdateMetrics(NamedTuple):
    """Scalars of one update, averaged over devices."""

    loss: Array
    value_loss: Array
    reward_loss: Array
    policy_loss: Array
    weight_decay_loss: Array
    grad_norm: Array
    learning_rate: Array
    finite: Array


def make_schedule(
    *, learning_rate: float, warmup_updates: int, decay_updates: int | None
) -> optax.Schedule:
    """Linear warm-up from 0, then constant or cosine decay to 10% of the peak."""
    if decay_updates is None:
        after = optax.constant_schedule(learning_rate)
    else:
        after = optax.cosine_decay_schedule(learning_rate, decay_updates, alpha=0.1)
    if warmup_updates == 0:
        return after
    warmup = optax.linear_schedule(0.0, learning_rate, warmup_updates)
    return optax.join_schedules([warmup, after], [warmup_updates])


def make_optimizer(
    *,
    optimizer: str = "adam",
    learning_rate: float = 3e-3,
    momentum: float = 0.9,
    warmup_updates: int = 0,
    decay_updates: int | None = None,
    max_grad_norm: float = 5.0,
) -> optax.GradientTransformation:
    """Global-norm clipping, then Adam or SGD with momentum, skipping non-finite updates.

    ``optax.apply_if_finite`` leaves parameters and optimiser state untouched when a gradient is not
    finite and counts it (``notfinite_count``, consecutive; ``total_notfinite``); the host loop stops
    a run after too many in a row, so the wrapper itself never gives up.
    """
    schedule = make_schedule(
        learning_rate=learning_rate, warmup_updates=warmup_updates, decay_updates=decay_updates
    )
    if optimizer == "adam":
        base = optax.adam(schedule)
    elif optimizer == "sgd":
        base = optax.sgd(schedule, momentum=momentum)
    else:
        raise ValueError(f"optimizer must be 'adam' or 'sgd'; got {optimizer!r}")
    chain = optax.chain(optax.clip_by_global_norm(max_grad_norm), base)
    return optax.apply_if_finite(chain, max_consecutive_errors=jnp.iinfo(jnp.int32).max)


def init_train_state(params: Params, optimizer: optax.GradientTransformation) -> TrainState:
    return TrainState(
        params=params, opt_state=optimizer.init(params), step=jnp.zeros((), jnp.int32)
    )


def nonfinite_counts(opt_state: optax.OptState) -> tuple[Array, Array]:
    """(consecutive, total) updates skipped for a non-finite gradient."""
    return opt_state.notfinite_count, opt_state.total_notfinite


def update(
    state: TrainState,
    batch: Batch,
    *,
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    schedule: optax.Schedule,
    axis_name: str | None = AXIS,
) -> tuple[TrainState, LossAux, UpdateMetrics]:
    """One learner update on this device's share of the batch.

    With ``axis_name``, gradients and metrics are averaged over that mapped axis, so every device
    applies the same update to its copy of the parameters; with None it runs on a single device.
    """
    (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, batch)
    if axis_name is not None:
        grads = jax.lax.pmean(grads, axis_name)
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    grad_norm = optax.global_norm(grads)
    metrics = UpdateMetrics(
        loss=loss,
        value_loss=aux.value_loss,
        reward_loss=aux.reward_loss,
        policy_loss=aux.policy_loss,
        weight_decay_loss=aux.weight_decay_loss,
        grad_norm=grad_norm,
        learning_rate=jnp.asarray(schedule(state.step), jnp.float32),
        finite=jnp.isfinite(grad_norm).astype(jnp.float32),
    )
    if axis_name is not None:
        metrics = jax.lax.pmean(metrics, axis_name)
    return TrainState(params, opt_state, state.step + 1), aux, metrics
