"""``make_train(config)``: self-play, replay, targets and learning as one compiled, data-parallel step.

Each call of the step is one iteration of the Anakin loop (Hessel et al., 2021, "Podracer"), on every
device at once: act for ``rollout_length`` steps in this device's environments, add the data to this
device's replay, then run ``updates_per_iteration`` learner updates on sequences sampled from it, with
gradients averaged over the mesh axis ``'data'``. The per-device function is wrapped in
``jax.shard_map`` over all devices (of all processes after ``jax.distributed.initialize()``); the
same function also runs under ``jax.pmap`` (:meth:`Trainer.pmap_step`). With ``config.num_seeds > 1``
it is vmapped over a leading seed axis of the whole state: independent runs in one program.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from mz_jax import actor as actor_lib
from mz_jax import learner, networks
from mz_jax import replay as replay_lib
from mz_jax.config import TrainConfig
from mz_jax.envs import Env, make_env
from mz_jax.loss import make_loss_fn
from mz_jax.search import SearchConfig
from mz_jax.targets import make_targets, reanalyse_values, window_length
from mz_jax.types import Array, MuZeroNetwork, Params

AXIS = learner.AXIS


class RunState(NamedTuple):
    """The whole state of a training run: everything needed to continue it exactly.

    Attributes:
      train: parameters, optimiser state and update count (replicated).
      target_params: the parameters that ``reanalyse_values`` bootstraps value targets with, a
        copy of ``train.params`` refreshed every ``target_update_every`` updates (replicated).
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


class IterationMetrics(NamedTuple):
    """Scalars of one iteration, the same on every device."""

    loss: Array
    value_loss: Array
    reward_loss: Array
    policy_loss: Array
    weight_decay_loss: Array
    grad_norm: Array
    learning_rate: Array
    updates: Array
    episodes: Array
    episode_return_sum: Array
    episode_length_sum: Array
    nonfinite_env_steps: Array
    nonfinite_updates_in_a_row: Array
    nonfinite_updates_total: Array
    temperature: Array
    beta: Array


def build_network(config: TrainConfig, env: Env, key: Array) -> tuple[MuZeroNetwork, Params]:
    """The network of ``config.network`` for ``env``'s observations and actions."""
    net = config.network
    kind = net.kind
    if kind == "auto":
        kind = "resnet" if len(env.observation_shape) == 3 else "mlp"
    common = dict(
        observation_shape=env.observation_shape if env.observation_shape else (1,),
        num_actions=env.num_actions,
        value_support_size=net.value_support_size,
        reward_support_size=net.reward_support_size,
    )
    if kind == "mlp":
        return networks.make_mlp_network(
            key, hidden_sizes=net.hidden_sizes, latent_size=net.latent_size, **common
        )
    if len(env.observation_shape) != 3:
        raise ValueError(
            f"config field 'network.kind' = 'resnet' needs image observations [H, W, C]; "
            f"{env.name} observes shape {env.observation_shape}: use 'mlp'"
        )
    return networks.make_resnet_network(
        key,
        channels=net.channels,
        num_blocks=net.num_blocks,
        downsample=net.downsample,
        **common,
    )


def make_learner(
    config: TrainConfig, network: MuZeroNetwork, *, unroll: int | bool = 1
) -> tuple[Callable, Callable, Any]:
    """The loss function, learning-rate schedule and optimiser of ``config``, as training uses them.

    Args:
      unroll: the ``lax.scan`` unroll of the model (see :func:`mz_jax.make_loss_fn`).
    """
    loss_fn = make_loss_fn(
        network,
        value_loss_weight=config.value_loss_weight,
        weight_decay=config.weight_decay,
        hidden_grad_scale=config.hidden_grad_scale,
        unroll=unroll,
    )
    schedule = learner.make_schedule(
        learning_rate=config.learning_rate,
        warmup_updates=config.warmup_updates,
        decay_updates=config.lr_decay_updates,
    )
    optimizer = learner.make_optimizer(
        optimizer=config.optimizer,
        learning_rate=config.learning_rate,
        momentum=config.momentum,
        warmup_updates=config.warmup_updates,
        decay_updates=config.lr_decay_updates,
        max_grad_norm=config.max_grad_norm,
    )
    return loss_fn, schedule, optimizer


def temperature_at(schedule: tuple[tuple[float, float], ...], progress: Array) -> Array:
    """The temperature of the first ``(fraction, temperature)`` pair whose fraction exceeds progress."""
    fractions = jnp.asarray([f for f, _ in schedule], jnp.float32)
    temperatures = jnp.asarray([t for _, t in schedule], jnp.float32)
    index = jnp.minimum(jnp.sum(progress >= fractions), len(schedule) - 1)
    return temperatures[index]


@dataclasses.dataclass(frozen=True)
class Trainer:
    """A compiled training run (see :func:`make_train`).

    Attributes:
      config: the configuration it was made from.
      env: the training environment.
      network: the MuZero network.
      search_config: the search used for acting and evaluation.
      mesh: the device mesh, one axis ``'data'``.
      init: ``init(seed) -> RunState``, sharded over the mesh.
      step: ``step(state) -> (state, IterationMetrics)``, one iteration on every device (the input
        state is donated).
      evaluate: ``evaluate(params, key) -> EvalResult``, greedy episodes on separate environments.
      per_device_step: the per-device function that ``step`` wraps in ``shard_map``.

    With ``config.num_seeds = S > 1`` the run state holds S independent runs, seeds ``seed`` to
    ``seed + S - 1``: ``init(seed)`` gives every leaf a leading axis ``[S]``, ``step`` advances all of
    them (metrics ``[S]``), and ``evaluate`` takes parameters ``[S, ...]`` and keys ``[S]`` and
    returns episodes ``[S, num_episodes]``. Run ``i`` equals the plain run of seed ``seed + i`` up
    to float rounding.
      state_specs: the ``PartitionSpec`` of every leaf of the run state over ``'data'``.
      abstract_state: the run state's shapes, dtypes and shardings (``jax.ShapeDtypeStruct``
        leaves), e.g. to restore a checkpoint onto the mesh.
      env_steps_per_iteration: environment steps one ``step`` takes, all devices together.
      bytes_per_transition: replay memory per stored transition.
    """

    config: TrainConfig
    env: Env
    network: MuZeroNetwork
    search_config: SearchConfig
    mesh: jax.sharding.Mesh
    init: Callable[[int], RunState]
    step: Callable[[RunState], tuple[RunState, IterationMetrics]]
    evaluate: Callable[[Params, Array], actor_lib.EvalResult]
    per_device_step: Callable[[RunState], tuple[RunState, IterationMetrics]]
    state_specs: Any
    abstract_state: Any
    env_steps_per_iteration: int
    bytes_per_transition: int

    def pmap_step(self, state: RunState) -> tuple[RunState, IterationMetrics]:
        """The same iteration as :attr:`step`, run by ``jax.pmap`` over the mesh's devices."""
        devices = list(self.mesh.devices.flat)
        per_device = to_device_major(state, self.state_specs, len(devices))
        new_state, metrics = _pmapped(self.per_device_step, tuple(devices))(per_device)
        return (
            from_device_major(new_state, self.state_specs),
            jax.tree.map(lambda x: x[0], metrics),
        )


@functools.cache
def _pmapped(fn, devices):
    return jax.pmap(fn, axis_name=AXIS, devices=list(devices))


def _spec_axis(spec: P) -> int | None:
    """The axis of an array that a spec shards over 'data', or None if replicated."""
    for axis, name in enumerate(spec):
        if name == AXIS:
            return axis
    return None


def to_device_major(state: Any, specs: Any, num_devices: int) -> Any:
    """The pmap layout of a global state: a leading device axis on every leaf."""

    def split(x, spec):
        axis = _spec_axis(spec)
        if axis is None:
            return np.broadcast_to(x, (num_devices, *x.shape))
        shape = (*x.shape[:axis], num_devices, x.shape[axis] // num_devices, *x.shape[axis + 1 :])
        return np.moveaxis(x.reshape(shape), axis, 0)

    return jax.tree.map(
        lambda x, spec: _on_host(split, x, spec), state, specs, is_leaf=lambda x: isinstance(x, P)
    )


def from_device_major(state: Any, specs: Any) -> Any:
    """Inverse of :func:`to_device_major` (replicated leaves are taken from device 0)."""

    def merge(x, spec):
        axis = _spec_axis(spec)
        if axis is None:
            return x[0]
        moved = np.moveaxis(x, 0, axis)
        shape = (
            *moved.shape[:axis],
            moved.shape[axis] * moved.shape[axis + 1],
            *moved.shape[axis + 2 :],
        )
        return moved.reshape(shape)

    return jax.tree.map(
        lambda spec, x: _on_host(merge, x, spec), specs, state, is_leaf=lambda x: isinstance(x, P)
    )


def _on_host(relayout: Callable, x: Any, spec: P) -> Any:
    """``relayout(numpy_x, spec)``; a typed PRNG key array (which numpy cannot hold) goes through its
    key data, whose extra trailing axis the leading-axis relayouts leave alone, and back."""
    if jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
        data = relayout(np.asarray(jax.random.key_data(x)), spec)
        return jax.random.wrap_key_data(data, impl=jax.random.key_impl(x))
    return relayout(np.asarray(x), spec)


def _state_specs(state: RunState, *, seeded: bool) -> RunState:
    """The partition specs of a run state; ``seeded``: every leaf has a leading (unsharded) seed
    axis."""
    replicated = lambda tree: jax.tree.map(lambda _: P(), tree)
    specs = RunState(
        train=replicated(state.train),
        target_params=replicated(state.target_params),
        actor=jax.tree.map(lambda _: P(AXIS), state.actor),
        replay=replay_lib.ReplayState(
            data=jax.tree.map(lambda _: P(None, AXIS), state.replay.data),
            priority=P(None, AXIS),
            write_index=P(),
            num_written=P(),
            max_priority=P(),
        ),
        key=P(),
        iteration=P(),
    )
    if not seeded:
        return specs
    return jax.tree.map(lambda spec: P(None, *spec), specs, is_leaf=lambda x: isinstance(x, P))


def make_train(config: TrainConfig, *, devices: list | None = None) -> Trainer:
    """Builds the environment, network, optimiser and the compiled, data-parallel training step.

    Args:
      config: the run's configuration (validated when it was made).
      devices: the devices of the mesh; default all devices of all processes.
    """
    devices = list(jax.devices() if devices is None else devices)
    num_devices = len(devices)
    config.check_devices(num_devices)
    env = make_env(config.env, max_episode_steps=config.max_episode_steps)
    search_config = dataclasses.replace(
        config.search, discount=config.discount, two_player=env.num_players == 2
    )
    if search_config.max_num_considered_actions > env.num_actions:
        search_config = dataclasses.replace(
            search_config, max_num_considered_actions=env.num_actions
        )
    network, _ = build_network(config, env, jax.random.key(0))
    loss_fn, schedule, optimizer = make_learner(config, network)
    mesh = jax.sharding.Mesh(np.asarray(devices), (AXIS,))
    local_batch = config.batch_size // num_devices
    window = window_length(num_unroll_steps=config.num_unroll_steps, td_steps=config.td_steps)
    steps_per_iteration = config.rollout_length * config.num_envs
    total_steps = config.total_env_steps
    example = actor_lib.transition_spec(env)
    if config.replay_capacity // config.num_envs < max(window, config.rollout_length):
        raise ValueError(
            f"config field 'replay_capacity' = {config.replay_capacity} is invalid: allowed at least "
            f"num_envs * max(window, rollout_length) = "
            f"{config.num_envs * max(window, config.rollout_length)}"
        )
    make_batch_targets = jax.vmap(
        functools.partial(
            make_targets,
            num_unroll_steps=config.num_unroll_steps,
            td_steps=config.td_steps,
            discount=config.discount,
        )
    )

    def init(seed: int | Array) -> RunState:
        key = jax.random.key(seed)
        params_key, actor_key, run_key = jax.random.split(key, 3)
        _, params = build_network(config, env, params_key)
        return RunState(
            train=learner.init_train_state(params, optimizer),
            target_params=jax.tree.map(jnp.copy, params),
            actor=actor_lib.init_actor(env, actor_key, num_envs=config.num_envs),
            replay=replay_lib.init(
                example, capacity=config.replay_capacity, num_envs=config.num_envs
            ),
            key=run_key,
            iteration=jnp.zeros((), jnp.int32),
        )

    def per_device_step(state: RunState) -> tuple[RunState, IterationMetrics]:
        key, iteration_key = jax.random.split(state.key)
        device_key = jax.random.fold_in(iteration_key, jax.lax.axis_index(AXIS))
        act_key, learn_key = jax.random.split(device_key)
        env_steps = state.iteration.astype(jnp.float32) * steps_per_iteration
        progress = (
            jnp.minimum(env_steps / total_steps, 1.0) if total_steps else jnp.zeros((), jnp.float32)
        )
        temperature = temperature_at(config.temperature_schedule, progress)
        beta_start, beta_end = config.priority_beta
        beta = beta_start + (beta_end - beta_start) * progress
        params = state.train.params

        actor, trajectory, stats = actor_lib.rollout(
            params,
            act_key,
            state.actor,
            env=env,
            network=network,
            search_config=search_config,
            num_steps=config.rollout_length,
            temperature=temperature,
            random_action_probability=config.random_action_probability,
        )
        stats = jax.lax.psum(stats, AXIS)
        replay = replay_lib.add(state.replay, trajectory)

        def learn(train, target_params, replay):
            def one_update(carry, update_key):
                train, target_params, replay = carry
                windows, index, weights = replay_lib.sample(
                    replay,
                    update_key,
                    batch_size=local_batch,
                    window_length=window,
                    alpha=config.priority_alpha,
                    beta=beta,
                )
                if config.reanalyse_values:
                    windows = reanalyse_values(
                        target_params,
                        windows,
                        network=network,
                        num_unroll_steps=config.num_unroll_steps,
                        td_steps=config.td_steps,
                    )
                batch = make_batch_targets(windows)._replace(weight=weights)
                train, aux, metrics = learner.update(
                    train, batch, loss_fn=loss_fn, optimizer=optimizer, schedule=schedule
                )
                replay = replay_lib.update_priorities(replay, index, aux.priority, axis_name=AXIS)
                if config.reanalyse_values:
                    refresh = train.step % config.target_update_every == 0
                    target_params = jax.tree.map(
                        lambda new, old: jnp.where(refresh, new, old), train.params, target_params
                    )
                return (train, target_params, replay), metrics

            keys = jax.random.split(learn_key, config.updates_per_iteration)
            carry = (train, target_params, replay)
            (train, target_params, replay), metrics = jax.lax.scan(one_update, carry, keys)
            mean_metrics = jax.tree.map(jnp.mean, metrics)
            return train, target_params, replay, mean_metrics, jnp.int32(len(keys))

        def skip(train, target_params, replay):
            zeros = learner.UpdateMetrics(
                *(jnp.zeros((), jnp.float32) for _ in learner.UpdateMetrics._fields)
            )
            return train, target_params, replay, zeros, jnp.int32(0)

        ready = replay_lib.can_sample(replay, window_length=window) & (
            replay.num_written >= config.min_replay_steps
        )
        learner_state = (state.train, state.target_params, replay)
        if config.updates_per_iteration == 0:
            train, target_params, replay, update_metrics, updates = skip(*learner_state)
        else:
            train, target_params, replay, update_metrics, updates = jax.lax.cond(
                ready, learn, skip, *learner_state
            )
        consecutive, total = learner.nonfinite_counts(train.opt_state)
        metrics = IterationMetrics(
            loss=update_metrics.loss,
            value_loss=update_metrics.value_loss,
            reward_loss=update_metrics.reward_loss,
            policy_loss=update_metrics.policy_loss,
            weight_decay_loss=update_metrics.weight_decay_loss,
            grad_norm=update_metrics.grad_norm,
            learning_rate=update_metrics.learning_rate,
            updates=updates,
            episodes=stats.episodes,
            episode_return_sum=stats.return_sum,
            episode_length_sum=stats.length_sum,
            nonfinite_env_steps=stats.nonfinite,
            nonfinite_updates_in_a_row=consecutive,
            nonfinite_updates_total=total,
            temperature=temperature,
            beta=beta,
        )
        new_state = RunState(
            train=train,
            target_params=target_params,
            actor=actor,
            replay=replay,
            key=key,
            iteration=state.iteration + 1,
        )
        return new_state, metrics

    num_seeds = config.num_seeds
    if num_seeds == 1:
        run_init, run_step = init, per_device_step
        evaluate_one_or_all = actor_lib.evaluate
    else:
        # Seeds as a leading axis of every leaf. A `lax.cond` whose predicate is batched becomes a
        # select, so while the replay warms up the updates are computed and discarded (the
        # predicate is the same for every seed).
        def run_init(seed):
            return jax.vmap(init)(seed + jnp.arange(num_seeds))

        run_step = jax.vmap(per_device_step)

        def evaluate_one_or_all(params, key, **kwargs):
            evaluate_one = functools.partial(actor_lib.evaluate, **kwargs)
            return jax.vmap(evaluate_one)(params, key)

    shapes = jax.eval_shape(run_init, 0)
    specs = _state_specs(shapes, seeded=num_seeds > 1)
    shardings = jax.tree.map(
        lambda spec: NamedSharding(mesh, spec), specs, is_leaf=lambda x: isinstance(x, P)
    )
    abstract_state = jax.tree.map(
        lambda s, sharding: jax.ShapeDtypeStruct(s.shape, s.dtype, sharding=sharding),
        shapes,
        shardings,
    )
    metric_specs = IterationMetrics(*(P() for _ in IterationMetrics._fields))
    step = jax.jit(
        jax.shard_map(
            run_step,
            mesh=mesh,
            in_specs=(specs,),
            out_specs=(specs, metric_specs),
            check_vma=False,
        ),
        donate_argnums=0,
    )
    eval_env = env
    evaluate = jax.jit(
        functools.partial(
            evaluate_one_or_all,
            env=eval_env,
            network=network,
            search_config=search_config,
            num_episodes=config.eval_episodes,
            max_steps=config.eval_max_steps,
            opponent="random" if env.num_players == 2 else None,
        )
    )
    return Trainer(
        config=config,
        env=env,
        network=network,
        search_config=search_config,
        mesh=mesh,
        init=jax.jit(run_init, out_shardings=shardings),
        step=step,
        evaluate=evaluate,
        per_device_step=run_step,
        state_specs=specs,
        abstract_state=abstract_state,
        env_steps_per_iteration=steps_per_iteration,
        bytes_per_transition=replay_lib.bytes_per_transition(example),
    )
