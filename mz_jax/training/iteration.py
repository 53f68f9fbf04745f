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

from mz_jax.core.targets import bootstrap_rows, make_targets
from mz_jax.training import actor as actor_lib
from mz_jax.training import augment, learner, reanalyse
from mz_jax.training import replay as replay_lib
from mz_jax.training.build import Components
from mz_jax.types import Array, Params

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
    config, env = components.config, components.env
    params_key, actor_key, run_key = jax.random.split(jax.random.key(seed), 3)
    params = components.init_params(params_key)
    return RunState(
        train=learner.init_train_state(params, components.optimizer),
        target_params=jax.tree.map(jnp.copy, params),
        actor=actor_lib.init_actor(
            env,
            actor_key,
            num_envs=config.num_envs,
            repeat_exploration=config.exploration_repeat_exponent is not None,
        ),
        replay=replay_lib.init(
            actor_lib.transition_spec(env, final_observation=records_final_observation(components)),
            capacity=config.replay_capacity,
            num_envs=config.num_envs,
        ),
        key=run_key,
        iteration=jnp.zeros((), jnp.int32),
    )


def records_final_observation(components: Components) -> bool:
    """Whether self-play stores the observations truncated episodes reached (for reanalyse to
    refresh their bootstrap values): only with ``reanalyse_values`` and a time limit."""
    return components.config.reanalyse_values and components.env.max_episode_steps is not None


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
    """One iteration on this device (call it under ``shard_map`` or ``pmap`` over ``'data'``)."""
    config = components.config
    key, iteration_key = jax.random.split(state.key)
    device_key = jax.random.fold_in(iteration_key, jax.lax.axis_index(AXIS))
    act_key, learn_key = jax.random.split(device_key)
    env_steps = state.iteration.astype(jnp.float32) * config.env_steps_per_iteration
    total_steps = config.total_env_steps
    progress = (
        jnp.minimum(env_steps / total_steps, 1.0) if total_steps else jnp.zeros((), jnp.float32)
    )
    temperature = temperature_at(config.temperature_schedule, progress)
    beta_start, beta_end = config.priority_beta
    beta = beta_start + (beta_end - beta_start) * progress

    actor, trajectory, stats = actor_lib.rollout(
        state.train.params,
        act_key,
        state.actor,
        env=components.env,
        network=components.network,
        search_config=components.search_config,
        num_steps=config.rollout_length,
        temperature=temperature,
        random_action_probability=random_action_probability_at(
            config.random_action_probability, config.random_action_anneal, progress
        ),
        exploration_repeat_exponent=config.exploration_repeat_exponent,
        record_final_observation=records_final_observation(components),
    )
    stats = jax.lax.psum(stats, AXIS)
    replay = replay_lib.add(state.replay, trajectory)

    learn = functools.partial(_learn, components, key=learn_key, beta=beta)
    learner_state = (state.train, state.target_params, replay)
    if config.updates_per_iteration == 0:
        train, target_params, replay, update_metrics = _skip(learn, *learner_state)
    else:
        ready = replay_lib.can_sample(
            replay, window_length=config.window_length, written_rows=config.written_window_rows
        ) & (replay.num_written >= config.min_replay_steps)
        skip = functools.partial(_skip, learn)
        if components.unroll_learner:
            # No branch either: XLA:CPU runs a convolution's gradient inside a conditional as
            # slowly as inside a loop, so the updates run every iteration and are dropped until
            # the replay is ready (the first few iterations of a run).
            learned, skipped = learn(*learner_state), skip(*learner_state)
            train, target_params, replay, update_metrics = jax.tree.map(
                lambda new, old: jnp.where(ready, new, old), learned, skipped
            )
        else:
            train, target_params, replay, update_metrics = jax.lax.cond(
                ready, learn, skip, *learner_state
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
        "actor": {
            "episodes": stats.episodes,
            "episode_return_sum": stats.return_sum,
            "episode_length_sum": stats.length_sum,
            "nonfinite_env_steps": stats.nonfinite,
            "temperature": temperature,
        },
        "replay": {"beta": beta},
    }
    new_state = RunState(
        train=train,
        target_params=target_params,
        actor=actor,
        replay=replay,
        key=key,
        iteration=state.iteration + 1,
    )
    return new_state, metrics


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
    config = components.config
    batch_size = config.batch_size // jax.lax.axis_size(AXIS)
    reanalysed_policies = round(config.reanalyse_policy_fraction * batch_size)
    returns = dict(
        num_unroll_steps=config.num_unroll_steps,
        td_steps=config.td_steps,
        stop_at_exploratory=config.stop_value_targets_at_exploration,
    )
    make_batch_targets = jax.vmap(
        functools.partial(
            make_targets,
            **returns,
            discount=config.discount,
            next_observation=config.uses_next_observation,
            same_player=bool(components.network_config.predict_turn),
        )
    )
    # The rows each window's value targets bootstrap from: the only ones reanalyse refreshes.
    bootstrap_rows_of = jax.vmap(functools.partial(bootstrap_rows, **returns))

    def one_update(carry, update_key):
        train, target_params, replay = carry
        windows, index, weights = replay_lib.sample(
            replay,
            update_key,
            batch_size=batch_size,
            window_length=config.window_length,
            alpha=config.priority_alpha,
            beta=beta,
            written_rows=config.written_window_rows,
        )
        written = None
        if config.sample_newest_steps:
            written = replay_lib.written_rows_of(replay, index, window_length=config.window_length)
        td_steps = None
        if config.off_policy_correction_steps is not None:
            age = reanalyse.window_age(replay, index, num_envs=config.num_envs)
            td_steps = reanalyse.td_steps_for_age(
                age,
                td_steps=config.td_steps,
                correction_steps=config.off_policy_correction_steps,
            )
        if config.reanalyse_values:
            windows = reanalyse.refresh_values(
                target_params,
                windows,
                network=components.network,
                final_observations=records_final_observation(components),
                rows=bootstrap_rows_of(windows, td_steps_used=td_steps, written_rows=written),
                search_config=components.search_config
                if config.reanalyse_values_by_search
                else None,
            )
        if reanalysed_policies:
            windows = reanalyse.refresh_policies(
                target_params,
                jax.random.fold_in(update_key, 1),
                windows,
                network=components.network,
                search_config=components.search_config,
                num_unroll_steps=config.num_unroll_steps,
                count=reanalysed_policies,
            )
        batch = make_batch_targets(windows, td_steps_used=td_steps, written_rows=written)._replace(
            weight=weights
        )
        if config.augment_reflection:
            flip = jax.random.bernoulli(jax.random.fold_in(update_key, 2), 0.5, (batch_size,))
            batch = augment.reflect_batch(batch, flip, components.env.reflection)
        loss_fn = components.loss_fn
        if config.consistency_target_params:
            loss_fn = functools.partial(loss_fn, target_params=target_params)
        train, aux, metrics = learner.update(
            train,
            batch,
            loss_fn=loss_fn,
            optimizer=components.optimizer,
            schedule=components.schedule,
        )
        replay = replay_lib.update_priorities(replay, index, aux.priority, axis_name=AXIS)
        if config.uses_target_params:
            target_params = refresh_target(
                train.params,
                target_params,
                refresh=train.step % config.target_update_every == 0,
                decay=config.target_ema_decay,
            )
        return (train, target_params, replay), metrics

    keys = jax.random.split(key, config.updates_per_iteration)
    (train, target_params, replay), metrics = jax.lax.scan(
        one_update,
        (train, target_params, replay),
        keys,
        unroll=True if components.unroll_learner else 1,
    )
    metrics = jax.tree.map(jnp.mean, metrics)
    metrics["optim"]["updates"] = jnp.int32(len(keys))
    return train, target_params, replay, metrics


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
