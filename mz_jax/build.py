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
from collections.abc import Callable

import optax

from mz_jax import learner, networks
from mz_jax.config import NetworkConfig, TrainConfig
from mz_jax.envs import Env, make_env
from mz_jax.loss import LossFn, make_loss_fn
from mz_jax.mcts import SearchConfig
from mz_jax.types import Array, MuZeroNetwork, Params
from mz_jax.validation import fail


@dataclasses.dataclass(frozen=True)
class Components:
    """Everything a run of ``config`` uses; plain Python objects and pure functions.

    Attributes:
      config: the configuration they were built from.
      env: the training environment.
      network: the MuZero network's pure functions.
      init_params: ``init_params(key) -> params``, one compiled program drawing every initial
        parameter.
      search_config: ``config.search`` with its derived fields set (discount, two_player).
      loss_fn: ``loss_fn(params, batch) -> (loss, LossAux)`` (:func:`mz_jax.make_loss_fn`).
      schedule: the learning rate as a function of the updates applied.
      optimizer: clipping, Adam or SGD on ``schedule``, skipping non-finite updates.
    """

    config: TrainConfig
    env: Env
    network: MuZeroNetwork
    init_params: Callable[[Array], Params]
    search_config: SearchConfig
    loss_fn: LossFn
    schedule: optax.Schedule
    optimizer: optax.GradientTransformation


def build(config: TrainConfig, *, unroll: int | bool = 1) -> Components:
    """The components of a run of ``config``.

    Args:
      config: the run's configuration (validated when it was made).
      unroll: the ``lax.scan`` unroll of the model in the loss (see :func:`mz_jax.make_loss_fn`).

    Raises:
      ValueError: an unknown environment, a network that does not fit its observations, or a search
        field that disagrees with the environment.
    """
    if not isinstance(config, TrainConfig):
        raise ValueError(f"config must be a mz_jax.TrainConfig; got {type(config).__name__}")
    env = make_env(config.env, max_episode_steps=config.max_episode_steps)
    network, init_params = make_network(config.network, env)
    schedule = learner.make_schedule(
        learning_rate=config.learning_rate,
        warmup_updates=config.warmup_updates,
        decay_updates=config.lr_decay_updates,
    )
    return Components(
        config=config,
        env=env,
        network=network,
        init_params=init_params,
        search_config=search_config_for(config, env),
        loss_fn=make_loss_fn(
            network,
            value_loss_weight=config.value_loss_weight,
            weight_decay=config.weight_decay,
            hidden_grad_scale=config.hidden_grad_scale,
            unroll=unroll,
        ),
        schedule=schedule,
        optimizer=learner.make_optimizer(
            optimizer=config.optimizer,
            learning_rate=schedule,
            momentum=config.momentum,
            max_grad_norm=config.max_grad_norm,
        ),
    )


def search_config_for(config: TrainConfig, env: Env) -> SearchConfig:
    """``config.search`` with the discount of training and the environment's number of players."""
    two_player = env.num_players == 2
    if config.search.two_player not in (None, two_player):
        fail(
            "search.two_player",
            config.search.two_player,
            f"None or {two_player} ({env.name} has {env.num_players} player(s))",
        )
    return dataclasses.replace(config.search, discount=config.discount, two_player=two_player)


def make_network(
    config: NetworkConfig, env: Env
) -> tuple[MuZeroNetwork, Callable[[Array], Params]]:
    """The network of ``config`` for ``env``'s observations and actions, and its ``init(key)``."""
    kind = config.kind
    if kind == "auto":
        kind = "resnet" if len(env.observation_shape) == 3 else "mlp"
    common = dict(
        observation_shape=env.observation_shape if env.observation_shape else (1,),
        num_actions=env.num_actions,
        value_support_size=config.value_support_size,
        reward_support_size=config.reward_support_size,
    )
    if kind == "mlp":
        return networks.mlp_network(
            hidden_sizes=config.hidden_sizes, latent_size=config.latent_size, **common
        )
    if len(env.observation_shape) != 3:
        fail(
            "network.kind",
            "resnet",
            f"'mlp' for {env.name}: 'resnet' needs image observations [H, W, C], and it observes "
            f"shape {env.observation_shape}",
        )
    return networks.resnet_network(
        channels=config.channels,
        num_blocks=config.num_blocks,
        downsample=config.downsample,
        **common,
    )
