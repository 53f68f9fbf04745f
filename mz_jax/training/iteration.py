"""One iteration of the Anakin loop on one device: act, store, learn (Hessel et al., 2021, "Podracer").

:func:`iteration` is a pure function of the run's components and state, written for one device:
it plays ``rollout_length`` steps in this device's environments, adds them to this device's replay,
then runs ``updates_per_iteration`` learner updates on sequences sampled from it, averaging gradients
and replay statistics over the mesh axis ``'data'``. :mod:`mz_jax.training.train` wraps it in ``shard_map``
(or ``pmap``), vmaps it over seeds and scans it over several iterations per call.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import optax

from mz_jax.training import actor as actor_lib
from mz_jax.training import augment, learner, reanalyse
from mz_jax.training import replay as replay_lib
from mz_jax.training.build import Components
from mz_jax.types import Array, Params, Trajectory

AXIS = learner.AXIS

IterationMetrics = dict[str, Any]
"""The scalars of one iteration, the same on every device, as a nested record (names and meanings
in :mod:`mz_jax.run.metrics`): ``loss``, ``targets`` and ``optim`` (means over the iteration's updates), ``actor``
and ``replay``."""


class RunState(NamedTuple):
    """The whole state of a training run: everything needed to continue it exactly.

    Attributes:
      train: parameters, optimiser state and update count (replicated).
      target_params: the parameters reanalyse (:mod:`mz_jax.training.reanalyse`) computes targets with, a
        copy of ``train.params`` (or their Polyak average, ``target_ema_decay``) refreshed every
        ``target_update_every`` updates (replicated).
      actor: self-play environments (sharded over 'data' along the environment axis).
      replay: the replay buffer (data sharded over 'data' along the environment axis).
      key: the run's PRNG key (replicated); split once per iteration.
      iteration: int32, iterations done.
    """

    train: learner.TrainState
    target_params: Params
    actor: actor_lib.ActorState
    replay: replay_lib.ReplayState
    key: Array
    iteration: Array


def init(components: Components, seed: int | Array) -> RunState:
    """The state of a new run (global shapes: all devices' environments together)."""
    acting, env = components.acting, components.env
    params_key, actor_key, run_key = jax.random.split(jax.random.key(seed), 3)
    params = components.init_params(params_key)
    return RunState(
        train=learner.init_train_state(params, components.optimizer),
        target_params=jax.tree.map(jnp.copy, params),
        actor=actor_lib.init_actor(
            env,
            actor_key,
            num_envs=acting.num_envs,
            repeat_exploration=acting.exploration_repeat_exponent is not None,
        ),
        replay=replay_lib.init(
            actor_lib.transition_spec(
                env,
                final_observation=acting.record_final_observation,
                observation_dtype=components.config.replay_observation_dtype,
            ),
            capacity=components.config.replay_capacity,
            num_envs=acting.num_envs,
        ),
        key=run_key,
        iteration=jnp.zeros((), jnp.int32),
    )


def temperature_at(schedule: tuple[tuple[float, float], ...], progress: Array) -> Array:
    """The temperature of the first ``(fraction, temperature)`` pair whose fraction exceeds progress."""
    fractions = jnp.asarray([f for f, _ in schedule], jnp.float32)
    temperatures = jnp.asarray([t for _, t in schedule], jnp.float32)
    index = jnp.minimum(jnp.sum(progress >= fractions), len(schedule) - 1)
    return temperatures[index]


def random_action_probability_at(
    probability: float, anneal: tuple[float, float] | None, progress: Array
) -> float | Array:
    """ε at ``progress`` (a fraction of the run): ``probability``, or with ``anneal`` = (final,
    fraction) the straight line from ``probability`` to ``final`` over that fraction, then ``final``."""
    if anneal is None:
        return probability
    final, fraction = anneal
    return probability + (final - probability) * jnp.minimum(progress / fraction, 1.0)


def iteration(components: Components, state: RunState) -> tuple[RunState, IterationMetrics]:
    """One iteration on this device (call it under ``shard_map`` or ``pmap`` over ``'data'``):
    :func:`act` with the state's parameters, then :func:`learn` on what it played."""
    actor, trajectory, actor_metrics, key = act(
        components, state.train.params, state.actor, state.key, state.iteration
    )
    train, target_params, replay, metrics = learn(
        components,
        state.train,
        state.target_params,
        state.replay,
        trajectory,
        state.key,
        state.iteration,
    )
    new_state = RunState(
        train=train,
        target_params=target_params,
        actor=actor,
        replay=replay,
        key=key,
        iteration=state.iteration + 1,
    )
    return new_state, with_actor_metrics(metrics, actor_metrics)


def with_actor_metrics(learner_metrics: IterationMetrics, actor_metrics: dict) -> IterationMetrics:
    """An iteration's record from :func:`learn`'s and :func:`act`'s, in the record's order."""
    return {
        "loss": learner_metrics["loss"],
        "targets": learner_metrics["targets"],
        "optim": learner_metrics["optim"],
        "actor": actor_metrics,
        "replay": learner_metrics["replay"],
    }


def _iteration_keys(key: Array) -> tuple[Array, Array, Array]:
    """``(next_key, act_key, learn_key)`` of the iteration that starts with the run key ``key``:
    the run key after it, and this device's keys for acting and for learning."""
    key, iteration_key = jax.random.split(key)
    device_key = jax.random.fold_in(iteration_key, jax.lax.axis_index(AXIS))
    act_key, learn_key = jax.random.split(device_key)
    return key, act_key, learn_key


def _progress(components: Components, iteration: Array) -> Array:
    """The fraction of ``total_env_steps`` done before ``iteration`` (0 for an endless run)."""
    config = components.config
    env_steps = iteration.astype(jnp.float32) * config.env_steps_per_iteration
    if not config.total_env_steps:
        return jnp.zeros((), jnp.float32)
    return jnp.minimum(env_steps / config.total_env_steps, 1.0)


def act(
    components: Components,
    params: Params,
    actor: actor_lib.ActorState,
    key: Array,
    iteration: Array,
) -> tuple[actor_lib.ActorState, Trajectory, dict, Array]:
    """The acting half of iteration ``iteration`` on this device: ``rollout_length`` steps of its
    environments with ``params``, searched with the iteration's temperature and ε. ``key`` is the
    run key the iteration starts with. Returns the actor state after them, the trajectory
    (leaves ``[T, E, ...]``), the ``actor`` metrics (summed over devices) and the run key after
    the iteration."""
    acting = components.acting
    next_key, act_key, _ = _iteration_keys(key)
    progress = _progress(components, iteration)
    temperature = temperature_at(acting.temperature_schedule, progress)
    actor, trajectory, stats = actor_lib.rollout(
        params,
        act_key,
        actor,
        env=components.env,
        network=components.network,
        search_config=components.search_config,
        num_steps=acting.rollout_length,
        temperature=temperature,
        random_action_probability=random_action_probability_at(
            acting.random_action_probability, acting.random_action_anneal, progress
        ),
        exploration_repeat_exponent=acting.exploration_repeat_exponent,
        record_final_observation=acting.record_final_observation,
    )
    stats = jax.lax.psum(stats, AXIS)
    metrics = {
        "episodes": stats.episodes,
        "episode_return_sum": stats.return_sum,
        "episode_length_sum": stats.length_sum,
        "nonfinite_env_steps": stats.nonfinite,
        "temperature": temperature,
    }
    return actor, trajectory, metrics, next_key


def learn(
    components: Components,
    train: learner.TrainState,
    target_params: Params,
    replay: replay_lib.ReplayState,
    trajectory: Trajectory,
    key: Array,
    iteration: Array,
) -> tuple[learner.TrainState, Params, replay_lib.ReplayState, IterationMetrics]:
    """The learning half of iteration ``iteration`` on this device: adds ``trajectory`` to the
    replay, then runs ``updates_per_iteration`` updates once the replay is ready (none before).
    ``key`` is the run key the iteration starts with (as for :func:`act`). Returns the train
    state, target parameters and replay after them, and the iteration's metrics but ``actor``."""
    sampling = components.sampling
    _, _, learn_key = _iteration_keys(key)
    beta_start, beta_end = sampling.priority_beta
    beta = beta_start + (beta_end - beta_start) * _progress(components, iteration)
    replay = replay_lib.add(replay, trajectory)

    learn_updates = functools.partial(_learn, components, key=learn_key, beta=beta)
    learner_state = (train, target_params, replay)
    if sampling.updates_per_iteration == 0:
        train, target_params, replay, update_metrics = _skip(learn_updates, *learner_state)
    else:
        ready = replay_lib.can_sample(
            replay, window_length=sampling.window_length, written_rows=sampling.written_rows
        ) & (replay.num_written >= sampling.min_replay_steps)
        skip = functools.partial(_skip, learn_updates)
        if components.unroll_learner:
            # No branch either: XLA:CPU runs a convolution's gradient inside a conditional as
            # slowly as inside a loop, so the updates run every iteration and are dropped until
            # the replay is ready (the first few iterations of a run).
            learned, skipped = learn_updates(*learner_state), skip(*learner_state)
            train, target_params, replay, update_metrics = jax.tree.map(
                lambda new, old: jnp.where(ready, new, old), learned, skipped
            )
        else:
            train, target_params, replay, update_metrics = jax.lax.cond(
                ready, learn_updates, skip, *learner_state
            )
    consecutive, total = learner.nonfinite_counts(train.opt_state)
    metrics = {
        "loss": update_metrics["loss"],
        "targets": update_metrics["targets"],
        "optim": {
            **update_metrics["optim"],
            "nonfinite_in_a_row": consecutive,
            "nonfinite_total": total,
        },
        "replay": {"beta": beta},
    }
    return train, target_params, replay, metrics


def _learn(
    components: Components,
    train: learner.TrainState,
    target_params: Params,
    replay: replay_lib.ReplayState,
    *,
    key: Array,
    beta: Array,
):
    """``updates_per_iteration`` learner updates; metrics are their means (``optim/updates``: the
    count)."""
    batch_size = components.sampling.batch_size // jax.lax.axis_size(AXIS)
    one_update = functools.partial(
        _one_update,
        components,
        batch_size=batch_size,
        reanalysed_policies=round(components.reanalyse.policy_fraction * batch_size),
        beta=beta,
    )
    keys = jax.random.split(key, components.sampling.updates_per_iteration)
    (train, target_params, replay), metrics = jax.lax.scan(
        one_update,
        (train, target_params, replay),
        keys,
        unroll=True if components.unroll_learner else 1,
    )
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["optim"]["updates"] = jnp.int32(len(keys))
    return train, target_params, replay, metrics


def _one_update(
    components: Components,
    carry: tuple[learner.TrainState, Params, replay_lib.ReplayState],
    update_key: Array,
    *,
    batch_size: int,
    reanalysed_policies: int,
    beta: Array,
) -> tuple[tuple[learner.TrainState, Params, replay_lib.ReplayState], dict]:
    """One learner update on ``batch_size`` windows drawn from this device's replay: their
    targets (reanalysed, and mirrored where the run augments), the update, the new priorities and
    the target parameters; ``carry`` is ``(train, target_params, replay)``."""
    train, target_params, replay = carry
    sampling = components.sampling
    windows, index, weights = replay_lib.sample(
        replay,
        update_key,
        batch_size=batch_size,
        window_length=sampling.window_length,
        alpha=sampling.priority_alpha,
        beta=beta,
        written_rows=sampling.written_rows,
    )
    written = None
    if sampling.newest_steps:
        written = replay_lib.written_rows_of(replay, index, window_length=sampling.window_length)
    windows, td_steps = _reanalysed(
        components,
        target_params,
        update_key,
        replay,
        windows,
        index,
        written=written,
        policies=reanalysed_policies,
    )
    batch = components.make_batch(windows, td_steps_used=td_steps, written_rows=written)._replace(
        weight=weights
    )
    if components.reflection is not None:
        flip = jax.random.bernoulli(jax.random.fold_in(update_key, 2), 0.5, (batch_size,))
        batch = augment.reflect_batch(batch, flip, components.reflection)
    kept = components.target_params
    loss_fn = components.loss_fn
    if kept.in_consistency:
        loss_fn = functools.partial(loss_fn, target_params=target_params)
    train, aux, metrics = learner.update(
        train,
        batch,
        loss_fn=loss_fn,
        optimizer=components.optimizer,
        schedule=components.schedule,
    )
    replay = replay_lib.update_priorities(replay, index, aux.priority, axis_name=AXIS)
    if kept.refreshed:
        target_params = refresh_target(
            train.params,
            target_params,
            refresh=train.step % kept.update_every == 0,
            decay=kept.ema_decay,
        )
    return (train, target_params, replay), metrics


def _reanalysed(
    components: Components,
    target_params: Params,
    update_key: Array,
    replay: replay_lib.ReplayState,
    windows: Trajectory,
    index: replay_lib.ReplayIndex,
    *,
    written: Array | None,
    policies: int,
) -> tuple[Trajectory, Array | None]:
    """``(windows, td_steps)``: the sampled windows (leaves ``[B, W, ...]``) with their bootstrap
    values and the policies of their first ``policies`` windows refreshed with ``target_params``
    as :attr:`Components.reanalyse` says, and each window's TD steps ``[B]`` after the off-policy
    correction (None without it). ``written``: each window's written rows, or None; the policy
    search draws from ``fold_in(update_key, 1)``."""
    settings = components.reanalyse
    td_steps = None
    if settings.off_policy_correction_steps is not None:
        age = reanalyse.window_age(replay, index, num_envs=settings.num_envs)
        td_steps = reanalyse.td_steps_for_age(
            age,
            td_steps=settings.td_steps,
            correction_steps=settings.off_policy_correction_steps,
        )
    if settings.values:
        windows = reanalyse.refresh_values(
            target_params,
            windows,
            network=components.network,
            final_observations=components.acting.record_final_observation,
            # The rows each window's value targets bootstrap from: the only ones they read.
            rows=components.bootstrap_rows(windows, td_steps_used=td_steps, written_rows=written),
            search_config=settings.value_search,
        )
    if policies:
        windows = reanalyse.refresh_policies(
            target_params,
            jax.random.fold_in(update_key, 1),
            windows,
            network=components.network,
            search_config=settings.policy_search,
            num_unroll_steps=settings.num_unroll_steps,
            count=policies,
        )
    return windows, td_steps


def refresh_target(params: Params, target: Params, *, refresh: Array, decay: float) -> Params:
    """The target parameters after one update: where ``refresh``, ``params`` (``decay`` 0) or the
    Polyak average ``decay * target + (1 - decay) * params``; otherwise ``target`` unchanged."""
    if decay:
        params = optax.incremental_update(params, target, step_size=1.0 - decay)
    return jax.tree.map(lambda new, old: jnp.where(refresh, new, old), params, target)


def _skip(learn, train, target_params, replay):
    """No update (the replay is not ready yet): zero metrics of the same structure as ``learn``'s."""
    shapes = jax.eval_shape(learn, train, target_params, replay)[3]
    zeros = jax.tree.map(lambda s: jnp.zeros(s.shape, s.dtype), shapes)
    return train, target_params, replay, zeros
