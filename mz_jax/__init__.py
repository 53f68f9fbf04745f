"""mz_jax: a functional MuZero in JAX/Flax.

The public contract: ``scale_gradient``; the data types (``ModelOutput``, ``MuZeroNetwork``,
``Batch``, ``Trajectory``); the jitted loss (``make_loss_fn``; Stochastic MuZero's
``make_stochastic_loss_fn`` for a ``StochasticMuZeroNetwork``); the search (``search``,
``SearchConfig``); environments by name (``make_env``, ``register_env``); the networks
(``make_mlp_network``, ``make_resnet_network``); and training: ``build(config)`` makes a
``TrainConfig`` into its components, ``make_train`` compiles the data-parallel step around them,
``run_training`` is the host loop with checkpoints and logs, ``Agent`` acts with a trained run.

The subpackages are layers, each importing only those below it::

    cli        the mz-jax command
    show       a trained run seen: episodes drawn, a search tree, a game in the terminal, a ladder
    suite      suites over environments x seeds, opponents, reports
    run        one run on the host: loop, workdir, logs, checkpoints, Agent
    training   the compiled iteration: actor, replay, reanalyse, learner, build, make_train
    mcts       search with mctx on the learned model; the MCTS baseline on the true game
    config     TrainConfig, NetworkConfig, SearchConfig, their checks, overrides, presets
    networks   Flax NNX networks as pure functions      envs   environments by name
    core       ops, transforms, unroll, losses, targets, batch checks, field rules
    types      the data types of the public contract
"""

from mz_jax import config, core, envs, mcts, networks, run, training
from mz_jax.config import NetworkConfig, SearchConfig, StochasticConfig, TrainConfig
from mz_jax.core.loss import LossAux, check_batch, make_loss_fn
from mz_jax.core.ops import min_max_normalize, scale_gradient
from mz_jax.core.stochastic_loss import make_stochastic_loss_fn
from mz_jax.core.targets import make_targets
from mz_jax.envs import Env, list_envs, make_env, register_env
from mz_jax.mcts import SearchOutput, search
from mz_jax.networks import make_mlp_network, make_resnet_network
from mz_jax.run import Agent, run_training
from mz_jax.training.build import Components, build
from mz_jax.training.iteration import RunState
from mz_jax.training.learner import (
    TrainState,
    make_data_parallel_update,
    make_optimizer,
    make_pmap_update,
    make_schedule,
)
from mz_jax.training.train import Trainer, make_train
from mz_jax.types import (
    AfterstateOutput,
    Batch,
    ModelOutput,
    MuZeroNetwork,
    StochasticMuZeroNetwork,
    Trajectory,
)

__version__ = "0.1.0"

__all__ = [
    "AfterstateOutput",
    "Agent",
    "Batch",
    "Components",
    "Env",
    "LossAux",
    "ModelOutput",
    "MuZeroNetwork",
    "NetworkConfig",
    "RunState",
    "SearchConfig",
    "SearchOutput",
    "StochasticConfig",
    "StochasticMuZeroNetwork",
    "TrainConfig",
    "TrainState",
    "Trainer",
    "Trajectory",
    "build",
    "check_batch",
    "config",
    "core",
    "envs",
    "list_envs",
    "make_data_parallel_update",
    "make_env",
    "make_loss_fn",
    "make_mlp_network",
    "make_optimizer",
    "make_pmap_update",
    "make_resnet_network",
    "make_schedule",
    "make_stochastic_loss_fn",
    "make_targets",
    "make_train",
    "mcts",
    "min_max_normalize",
    "networks",
    "register_env",
    "run",
    "run_training",
    "scale_gradient",
    "search",
    "training",
]
