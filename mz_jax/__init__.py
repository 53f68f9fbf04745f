"""mz_jax: a functional MuZero in JAX/Flax.

The public contract: ``scale_gradient``; the data types (``ModelOutput``,
``MuZeroNetwork``, ``Batch``, ``Trajectory``); the jitted loss (``make_loss_fn``; Stochastic
MuZero's ``make_stochastic_loss_fn`` for a ``StochasticMuZeroNetwork``); the search
(``search``, ``SearchConfig``); environments by name (``make_env``, ``register_env``); the networks
(``make_mlp_network``, ``make_resnet_network``); and training: ``build(config)`` makes a
``TrainConfig`` into its components, ``make_train`` compiles the data-parallel step around them,
``run_training`` is the host loop with checkpoints and logs, ``Agent`` acts with a trained run.

Submodules hold the rest, one job each: ``networks``, ``transforms``, ``mcts``, ``envs``,
``stochastic``, ``actor``, ``replay``, ``targets``, ``reanalyse``, ``learner``, ``iteration``,
``train``, ``run``, ``metrics``, ``checkpoint``, ``workdir``, ``presets``, ``suite``.
"""

from mz_jax import (
    actor,
    envs,
    learner,
    mcts,
    metrics,
    networks,
    reanalyse,
    replay,
    stochastic,
    targets,
    transforms,
)
from mz_jax.agent import Agent
from mz_jax.build import Components, build
from mz_jax.config import NetworkConfig, TrainConfig
from mz_jax.envs import Env, list_envs, make_env, register_env
from mz_jax.iteration import RunState
from mz_jax.learner import (
    TrainState,
    make_data_parallel_update,
    make_optimizer,
    make_pmap_update,
    make_schedule,
)
from mz_jax.loss import LossAux, check_batch, make_loss_fn
from mz_jax.mcts import SearchConfig, SearchOutput, search
from mz_jax.networks import make_mlp_network, make_resnet_network
from mz_jax.ops import min_max_normalize, scale_gradient
from mz_jax.run import run_training
from mz_jax.stochastic import make_stochastic_loss_fn
from mz_jax.targets import make_targets
from mz_jax.train import Trainer, make_train
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
    "StochasticMuZeroNetwork",
    "TrainConfig",
    "TrainState",
    "Trainer",
    "Trajectory",
    "actor",
    "build",
    "check_batch",
    "envs",
    "learner",
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
    "metrics",
    "min_max_normalize",
    "networks",
    "reanalyse",
    "register_env",
    "replay",
    "run_training",
    "scale_gradient",
    "search",
    "stochastic",
    "targets",
    "transforms",
]
