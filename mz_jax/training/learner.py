"""The learner: training state, optimiser, and the per-device update with gradients averaged over 'data'.

The update is written for one device and averages gradients with ``lax.pmean`` over the mesh axis
``'data'``; :mod:`mz_jax.training.train` wraps the whole per-device iteration in ``jax.shard_map`` (or
``jax.pmap``, which gives the same result). For a training loop of one's own,
:func:`make_data_parallel_update` (``shard_map`` over a mesh) and :func:`make_pmap_update` (``pmap``)
wrap the update alone: parameters replicated, the batch split over devices along its leading axis.
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax
from jax.sharding import Mesh
from jax.sharding import PartitionSpec as P

from mz_jax.core.loss import LossAux, LossFn
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


UpdateMetrics = dict[str, Any]
"""The scalars of one update, averaged over devices, as a nested record (:mod:`mz_jax.run.metrics`):
``{'loss': LossAux.losses, 'targets': LossAux.clipped, 'optim': {'grad_norm', 'learning_rate',
'finite'}}``."""


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
    learning_rate: float | optax.Schedule = 3e-3,
    momentum: float = 0.9,
    max_grad_norm: float = 5.0,
    weight_decay: float = 0.0,
) -> optax.GradientTransformation:
    """Global-norm clipping, then Adam or SGD with momentum, skipping non-finite updates.

    ``optax.apply_if_finite`` leaves parameters and optimiser state untouched when a gradient is not
    finite and counts it (``notfinite_count``, consecutive; ``total_notfinite``); the host loop stops
    a run after too many in a row, so the wrapper itself never gives up.

    With ``weight_decay > 0`` the decay is decoupled from the gradient (Loshchilov & Hutter, 2019):
    AdamW for ``'adam'`` (``optax.adamw``), SGDW for ``'sgd'`` (momentum trace of the clipped
    gradient, then ``+ weight_decay * theta``, then the learning rate, so the decay does not pass
    through the momentum). The update is ``-learning_rate_t * (direction + weight_decay * theta)``:
    as in optax, the decay is multiplied by the learning-rate schedule. Unlike the L2
    ``weight_decay`` of :func:`mz_jax.make_loss_fn`, whose gradient ``weight_decay * theta`` is
    clipped, fed through the momentum and rescaled per parameter by Adam with the rest of the
    gradient, this decay shrinks every parameter by the same fraction ``learning_rate_t *
    weight_decay`` per update (use one or the other, not both).

    Args:
      optimizer: ``'adam'`` or ``'sgd'``.
      learning_rate: a constant, or a schedule of the updates applied so far (e.g.
        :func:`make_schedule`); skipped updates do not advance it.
      momentum: momentum of ``'sgd'``.
      max_grad_norm: the global-norm clipping threshold.
      weight_decay: the decoupled weight-decay coefficient, a finite float ``>= 0``. 0 (the
        default) gives exactly the optimiser without it (same updates, same ``opt_state`` tree, so
        checkpoints written without it load).
    """
    if (
        isinstance(weight_decay, bool)
        or not isinstance(weight_decay, numbers.Real)
        or not math.isfinite(weight_decay)
        or weight_decay < 0
    ):
        raise ValueError(f"weight_decay must be a finite float in [0, inf); got {weight_decay!r}")
    if optimizer == "adam":
        if weight_decay == 0.0:
            base = optax.adam(learning_rate)
        else:
            base = optax.adamw(learning_rate, weight_decay=float(weight_decay))
    elif optimizer == "sgd":
        if weight_decay == 0.0:
            base = optax.sgd(learning_rate, momentum=momentum)
        else:  # SGDW: the decay is added after the momentum trace, so it is not accumulated by it
            base = optax.chain(
                optax.trace(decay=momentum) if momentum is not None else optax.identity(),
                optax.add_decayed_weights(float(weight_decay)),
                optax.scale_by_learning_rate(learning_rate),
            )
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


def applied_updates(opt_state: optax.OptState) -> Array:
    """Updates the optimiser has applied, the count its learning-rate schedule reads (updates
    skipped for a non-finite gradient are not counted, unlike ``TrainState.step``)."""
    counts = [
        s.count
        for s in jax.tree.leaves(
            opt_state, is_leaf=lambda x: isinstance(x, optax.ScaleByScheduleState)
        )
        if isinstance(s, optax.ScaleByScheduleState)
    ]
    if not counts:  # a constant learning rate keeps no count: it is the same at every update
        return jnp.zeros((), jnp.int32)
    return counts[0]


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
    (_, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params, batch)
    if axis_name is not None:
        grads = jax.lax.pmean(grads, axis_name)
    learning_rate = schedule(applied_updates(state.opt_state))  # the rate this update applies
    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    grad_norm = optax.tree.norm(grads)
    metrics = {
        "loss": aux.losses,
        "targets": aux.clipped,
        "optim": {
            "grad_norm": grad_norm,
            "learning_rate": jnp.asarray(learning_rate, jnp.float32),
            "finite": jnp.isfinite(grad_norm).astype(jnp.float32),
        },
    }
    if axis_name is not None:
        metrics = jax.lax.pmean(metrics, axis_name)
    return TrainState(params, opt_state, state.step + 1), aux, metrics


UpdateFn = Callable[[TrainState, Batch], tuple[TrainState, UpdateMetrics]]


def _update_without_aux(
    state: TrainState, batch: Batch, **kwargs
) -> tuple[TrainState, UpdateMetrics]:
    # The per-example priorities in LossAux are sharded like the batch; the wrappers below return
    # replicated values only, so they are dropped here.
    state, _, metrics = update(state, batch, **kwargs)
    return state, metrics


def make_data_parallel_update(
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    schedule: optax.Schedule,
    mesh: Mesh,
    *,
    axis_name: str = AXIS,
    donate: bool = False,
) -> UpdateFn:
    """The learner update, data-parallel over the ``axis_name`` axis of ``mesh``, under one ``jax.jit``.

    ``update_fn(train_state, batch) -> (train_state, metrics)``: the :class:`TrainState` is replicated
    (``P()``); every leaf of the :class:`~mz_jax.types.Batch` (``[B, ...]``, B a multiple of the axis
    size) is split along its leading axis (``P(axis_name)``). Each device runs :func:`update` on its
    ``B / N`` examples, gradients and metrics are averaged over the axis, and every device applies the
    same step, so the result is the update of the whole batch on one device (up to float summation
    order). Metrics are scalars, replicated.

    Put inputs on the mesh first: ``jax.device_put(batch, NamedSharding(mesh, P(axis_name)))`` and
    ``jax.device_put(train_state, NamedSharding(mesh, P()))`` (after ``jax.distributed.initialize()``
    each process builds its share of the global batch, e.g. with ``jax.make_array_from_process_local_data``).

    Args:
      loss_fn: ``loss_fn(params, batch) -> (loss, LossAux)``, e.g. :func:`mz_jax.make_loss_fn`; the
        loss must be a mean over the batch, so the mean of the per-device means is the global mean.
      optimizer: e.g. :func:`make_optimizer`.
      schedule: the learning-rate schedule of ``optimizer``, reported in the metrics.
      mesh: a mesh with an axis named ``axis_name`` (other axes, if any, see replicated inputs).
      axis_name: the mesh axis the batch is split over.
      donate: donate the input train state's buffers to the output (saves one copy of the parameters
        and optimiser state; the input state must not be used afterwards).

    Returns:
      The jitted ``update_fn``.
    """
    if axis_name not in mesh.axis_names:
        raise ValueError(f"mesh has axes {mesh.axis_names}; no axis named {axis_name!r}")

    per_device = functools.partial(
        _update_without_aux,
        loss_fn=loss_fn,
        optimizer=optimizer,
        schedule=schedule,
        axis_name=axis_name,
    )

    # check_vma=False: with it on, JAX differentiates the replicated parameters as one value shared
    # by all devices and sums their gradients itself, so the explicit pmean in `update` would see
    # N times the mean gradient. Off, each device differentiates its own copy, exactly as under pmap.
    sharded = jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(P(), P(axis_name)),
        out_specs=(P(), P()),
        check_vma=False,
    )
    return jax.jit(sharded, donate_argnums=(0,) if donate else ())


def make_pmap_update(
    loss_fn: LossFn,
    optimizer: optax.GradientTransformation,
    schedule: optax.Schedule,
    *,
    devices: Sequence[jax.Device] | None = None,
    axis_name: str = AXIS,
    donate: bool = False,
) -> UpdateFn:
    """The update of :func:`make_data_parallel_update`, run by ``jax.pmap`` instead of ``shard_map``.

    ``update_fn(train_state, batch) -> (train_state, metrics)`` in the pmap layout: every input and
    output leaf has a leading device axis of size N = ``len(devices)``. The train state is N copies
    (e.g. ``jax.tree.map(lambda x: np.broadcast_to(x, (N, *x.shape)), state)``; all copies stay
    equal), the batch is ``[N, B / N, ...]``, and each metric is ``[N]`` with N equal entries. With the
    same data it computes the same as :func:`make_data_parallel_update`.

    Outputs come back as ``NamedSharding(Mesh(devices, (axis_name,)), P(axis_name))``; putting the
    first state there too (``jax.device_put``) spares a second compilation on the second call.

    Args:
      loss_fn: as in :func:`make_data_parallel_update`.
      optimizer: as in :func:`make_data_parallel_update`.
      schedule: as in :func:`make_data_parallel_update`.
      devices: the devices to map over; None: all local devices (``jax.local_devices()``).
      axis_name: the name of the mapped axis that gradients are averaged over.
      donate: donate the input train state's buffers to the output.

    Returns:
      The pmapped ``update_fn``.
    """

    per_device = functools.partial(
        _update_without_aux,
        loss_fn=loss_fn,
        optimizer=optimizer,
        schedule=schedule,
        axis_name=axis_name,
    )

    return jax.pmap(
        per_device,
        axis_name=axis_name,
        devices=None if devices is None else list(devices),
        donate_argnums=(0,) if donate else (),
    )
