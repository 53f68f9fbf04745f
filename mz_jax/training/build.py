"""``build(config)``: a :class:`~mz_jax.TrainConfig` made into everything a run needs, once.

Training (:func:`mz_jax.make_train`), :class:`~mz_jax.Agent`, ``mz-jax eval``, the suite and the
benchmarks all start here, so each of them acts, searches and learns exactly as training does:

::

    components = mz_jax.build(config)
    params = components.init_params(jax.random.key(0))     # the one compiled parameter init
    loss, aux = components.loss_fn(params, batch)

Nothing is compiled and no parameter is drawn until ``init_params`` is called. Fields derived from the
environment are derived here: the search's discount is the training discount and whether the game
is two-player comes from the environment; a value set by the user that disagrees is an error, never
silently replaced.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable

import jax
import optax

from mz_jax.config.checks import check_for_env
from mz_jax.config.network import NetworkConfig
from mz_jax.config.search import SearchConfig
from mz_jax.config.train import TrainConfig
from mz_jax.core.loss import LossFn, make_loss_fn
from mz_jax.core.stochastic_loss import make_stochastic_loss_fn
from mz_jax.core.targets import bootstrap_rows, make_targets
from mz_jax.envs import (
    Env,
    Reflection,
    make_env,
    repeat_action,
)
from mz_jax.training import learner
from mz_jax.training.network_for_env import make_network, network_config_for, network_kind
from mz_jax.types import Array, Batch, MuZeroNetwork, Params, StochasticMuZeroNetwork


@dataclasses.dataclass(frozen=True)
class Acting:
    """How self-play acts (:func:`mz_jax.training.actor.rollout`) and what it records.

    Attributes:
      num_envs: environments, all devices together.
      rollout_length: steps each environment plays per iteration.
      temperature_schedule: ``(fraction of the run, temperature)`` pairs of the muzero policy's
        action temperature (:func:`mz_jax.training.iteration.temperature_at`).
      random_action_probability: ε, the probability of a uniformly random legal action.
      random_action_anneal: ``(final ε, fraction of the run)`` to anneal ε over, or None.
      exploration_repeat_exponent: εz-greedy's exponent μ of the repeat durations, or None.
      record_final_observation: whether the observations truncated episodes reached are recorded
        (for reanalyse to refresh their bootstrap values): with ``reanalyse_values`` and a time
        limit.
    """

    num_envs: int
    rollout_length: int
    temperature_schedule: tuple[tuple[float, float], ...]
    random_action_probability: float
    random_action_anneal: tuple[float, float] | None
    exploration_repeat_exponent: float | None
    record_final_observation: bool


@dataclasses.dataclass(frozen=True)
class Sampling:
    """How the learner draws its windows from the replay (:func:`mz_jax.training.replay.sample`).

    Attributes:
      updates_per_iteration: learner updates per iteration, one batch each (0: none).
      batch_size: windows per update, all devices together.
      window_length: rows of a window, ``K + td_steps + 1``.
      written_rows: rows of a window that must be written before it can be drawn.
      newest_steps: whether a window may run past the newest written row
        (``sample_newest_steps``); the targets then stop each return at its last written row.
      min_replay_steps: rows the replay holds before the first update.
      priority_alpha: the priority exponent α.
      priority_beta: the importance-sampling exponent β at the start and at the end of the run.
    """

    updates_per_iteration: int
    batch_size: int
    window_length: int
    written_rows: int
    newest_steps: bool
    min_replay_steps: int
    priority_alpha: float
    priority_beta: tuple[float, float]


@dataclasses.dataclass(frozen=True)
class Reanalyse:
    """What the learner refreshes in its sampled windows with the target parameters, and its
    off-policy correction (EfficientZero §4.3; :mod:`mz_jax.training.reanalyse`).

    Attributes:
      values: refresh the root values the value targets bootstrap from (``reanalyse_values``).
      value_search: the search whose root values replace them (``reanalyse_values_by_search``),
        or None: the network's values.
      policy_fraction: the share of each batch whose policy targets a fresh search replaces.
      policy_search: that search (the acting search).
      num_unroll_steps: K: rows 0..K of a window have their policies refreshed.
      off_policy_correction_steps: older windows bootstrap sooner, one TD step fewer per this
        many env steps of age (:func:`mz_jax.training.reanalyse.td_steps_for_age`); None: never.
      td_steps: n, the TD steps of a window of age 0.
      num_envs: environments, all devices together: the env steps of one replay time slot.
    """

    values: bool
    value_search: SearchConfig | None
    policy_fraction: float
    policy_search: SearchConfig
    num_unroll_steps: int
    off_policy_correction_steps: int | None
    td_steps: int
    num_envs: int


@dataclasses.dataclass(frozen=True)
class TargetParams:
    """How the learner keeps and reads the target parameters (``RunState.target_params``).

    Attributes:
      refreshed: whether reanalyse reads them, so that they are refreshed after every update.
      update_every: they are refreshed every this many updates.
      ema_decay: the decay of their Polyak average of the parameters (0: a copy).
      in_consistency: whether the consistency loss encodes its targets with them.
    """

    refreshed: bool
    update_every: int
    ema_decay: float
    in_consistency: bool


@dataclasses.dataclass(frozen=True)
class Components:
    """Everything a run of ``config`` uses; plain Python objects and pure functions.

    Attributes:
      config: the configuration they were built from.
      network_config: ``config.network`` with its derived fields set (the support sizes).
      env: the training environment.
      network: the MuZero network's pure functions.
      init_params: ``init_params(key) -> params``, one compiled program drawing every initial
        parameter.
      search_config: ``config.search`` with its derived fields set (discount, two_player).
      loss_fn: ``loss_fn(params, batch) -> (loss, LossAux)`` (:func:`mz_jax.make_loss_fn`).
      schedule: the learning rate as a function of the updates applied.
      optimizer: clipping, Adam or SGD on ``schedule``, skipping non-finite updates.
      unroll_learner: ``config.unroll_learner`` resolved (:func:`unrolls_learner`): whether the
        loss's model steps and an iteration's updates are traced as straight-line code, without
        the conditional that skips the updates until the replay is ready.
      acting: how self-play acts and what it records.
      sampling: how the learner draws its windows from the replay.
      make_batch: ``make_batch(windows, *, td_steps_used, written_rows) -> Batch``: the training
        batch of windows with leaves ``[B, W, ...]`` (:func:`mz_jax.core.targets.make_targets`
        with the run's settings, vmapped; ``td_steps_used`` and ``written_rows`` ``[B]`` or None).
      bootstrap_rows: ``bootstrap_rows(windows, *, td_steps_used, written_rows) -> [B, K+1]``:
        the rows those value targets bootstrap from (:func:`mz_jax.core.targets.bootstrap_rows`).
      reanalyse: what the learner refreshes with the target parameters.
      target_params: how the target parameters are kept and read.
      reflection: the environment's mirror symmetry where batches are augmented with it
        (``augment_reflection``), else None.
    """

    config: TrainConfig
    network_config: NetworkConfig
    env: Env
    network: MuZeroNetwork | StochasticMuZeroNetwork
    init_params: Callable[[Array], Params]
    search_config: SearchConfig
    loss_fn: LossFn
    schedule: optax.Schedule
    optimizer: optax.GradientTransformation
    unroll_learner: bool
    acting: Acting
    sampling: Sampling
    make_batch: Callable[..., Batch]
    bootstrap_rows: Callable[..., Array]
    reanalyse: Reanalyse
    target_params: TargetParams
    reflection: Reflection | None


def make_run_env(config: TrainConfig) -> Env:
    """The environment a run of ``config`` acts in: ``config.env`` with its time limit, each action
    repeated ``config.action_repeat`` times.

    Raises:
      ValueError: an unknown environment, or ``action_repeat`` > 1 for a two-player game.
    """
    env = make_env(config.env, max_episode_steps=config.max_episode_steps, **config.env_kwargs)
    if config.action_repeat > 1 and env.num_players != 1:
        raise ValueError(
            f"'action_repeat' = {config.action_repeat} is invalid for {env.name}: allowed 1 for a "
            f"two-player game (its players take turns between actions)"
        )
    return repeat_action(env, config.action_repeat)


def build(config: TrainConfig, *, unroll: int | bool | None = None) -> Components:
    """The components of a run of ``config``.

    Args:
      config: the run's configuration (validated when it was made).
      unroll: the ``lax.scan`` unroll of the model in the loss (see :func:`mz_jax.make_loss_fn`);
        None: as :func:`unrolls_learner` resolves ``config.unroll_learner`` (all K steps as
        straight-line code, or one loop body).

    Raises:
      ValueError: an unknown environment, a network that does not fit its observations, or a search
        field that disagrees with the environment.
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a mz_jax.TrainConfig; got {type(config).__name__}")
    env = make_run_env(config)
    unroll_learner = unrolls_learner(config, env)
    if unroll is None:
        unroll = True if unroll_learner else 1
    check_for_env(config, env)
    network_config = network_config_for(config, env)
    network, init_params = make_network(
        network_config, env, projection=config.consistency_loss_weight > 0
    )
    loss_fn = _loss_fn(config, env, network, network_config, unroll=unroll)
    schedule = learner.make_schedule(
        learning_rate=config.learning_rate,
        warmup_updates=config.warmup_updates,
        decay_updates=config.decay_updates,
    )
    search_config = search_config_for(config, env)
    return Components(
        config=config,
        network_config=network_config,
        env=env,
        network=network,
        init_params=init_params,
        search_config=search_config,
        loss_fn=loss_fn,
        schedule=schedule,
        optimizer=learner.make_optimizer(
            optimizer=config.optimizer,
            learning_rate=schedule,
            momentum=config.momentum,
            max_grad_norm=config.max_grad_norm,
            weight_decay=config.weight_decay if config.decoupled_weight_decay else 0.0,
        ),
        unroll_learner=unroll_learner,
        **_learning_parts(config, env, network_config, search_config),
    )


def _loss_fn(
    config: TrainConfig,
    env: Env,
    network: MuZeroNetwork | StochasticMuZeroNetwork,
    network_config: NetworkConfig,
    *,
    unroll: int | bool,
) -> LossFn:
    """The loss of ``config``: :func:`mz_jax.make_loss_fn`, or :func:`mz_jax.make_stochastic_loss_fn`
    for a network with chance outcomes; the weight decay is in it unless decoupled."""
    if network_config.num_chance_outcomes is None:
        return make_loss_fn(
            network,
            value_loss_weight=config.value_loss_weight,
            reward_loss_weight=config.reward_loss_weight,
            weight_decay=0.0 if config.decoupled_weight_decay else config.weight_decay,
            hidden_grad_scale=config.hidden_grad_scale,
            consistency_loss_weight=config.consistency_loss_weight,
            value_target_sigma=config.value_target_sigma,
            unroll=unroll,
        )
    return make_stochastic_loss_fn(
        network,
        value_loss_weight=config.value_loss_weight,
        reward_loss_weight=config.reward_loss_weight,
        commitment_loss_weight=config.stochastic.commitment_loss_weight,
        weight_decay=0.0 if config.decoupled_weight_decay else config.weight_decay,
        hidden_grad_scale=config.hidden_grad_scale,
        consistency_loss_weight=config.consistency_loss_weight,
        code_usage_weight=config.stochastic.code_usage_weight,
        value_target_sigma=config.value_target_sigma,
        straight_through=config.stochastic.chance_straight_through,
        chance_outcome=env.chance_outcome
        if config.stochastic.chance_codes == "environment"
        else None,
        unroll=unroll,
    )


def _learning_parts(
    config: TrainConfig, env: Env, network_config: NetworkConfig, search_config: SearchConfig
) -> dict:
    """The components of acting and of the learner's updates (see :class:`Components`)."""
    record_final_observation = config.reanalyse_values and env.max_episode_steps is not None
    returns = dict(
        num_unroll_steps=config.num_unroll_steps,
        td_steps=config.td_steps,
        stop_at_exploratory=config.stop_value_targets_at_exploration,
    )
    return dict(
        acting=Acting(
            num_envs=config.num_envs,
            rollout_length=config.rollout_length,
            temperature_schedule=config.temperature_schedule,
            random_action_probability=config.random_action_probability,
            random_action_anneal=config.random_action_anneal,
            exploration_repeat_exponent=config.exploration_repeat_exponent,
            record_final_observation=record_final_observation,
        ),
        sampling=Sampling(
            updates_per_iteration=config.updates_per_iteration,
            batch_size=config.batch_size,
            window_length=config.window_length,
            written_rows=config.written_window_rows,
            newest_steps=config.sample_newest_steps,
            min_replay_steps=config.min_replay_steps,
            priority_alpha=config.priority_alpha,
            priority_beta=config.priority_beta,
        ),
        make_batch=jax.vmap(
            functools.partial(
                make_targets,
                **returns,
                discount=config.discount,
                next_observation=config.uses_next_observation,
                same_player=bool(network_config.predict_turn),
            )
        ),
        bootstrap_rows=jax.vmap(functools.partial(bootstrap_rows, **returns)),
        reanalyse=Reanalyse(
            values=config.reanalyse_values,
            value_search=search_config if config.reanalyse_values_by_search else None,
            policy_fraction=config.reanalyse_policy_fraction,
            policy_search=search_config,
            num_unroll_steps=config.num_unroll_steps,
            off_policy_correction_steps=config.off_policy_correction_steps,
            td_steps=config.td_steps,
            num_envs=config.num_envs,
        ),
        target_params=TargetParams(
            refreshed=config.uses_target_params,
            update_every=config.target_update_every,
            ema_decay=config.target_ema_decay,
            in_consistency=config.consistency_target_params,
        ),
        reflection=env.reflection if config.augment_reflection else None,
    )


def unrolls_learner(config: TrainConfig, env: Env) -> bool:
    """``config.unroll_learner``, or where it is None whether the network has convolutions (the
    ResNet, or the MLP with ``conv_channels``): their gradients inside a loop or a conditional
    run about 10x slower on a CPU than in straight-line code."""
    if config.unroll_learner is not None:
        return config.unroll_learner
    return network_kind(config.network, env) == "resnet" or config.network.conv_channels is not None


def search_config_for(config: TrainConfig, env: Env) -> SearchConfig:
    """``config.search`` with the discount of training and the environment's number of players."""
    two_player = env.num_players == 2
    return dataclasses.replace(config.search, discount=config.discount, two_player=two_player)
