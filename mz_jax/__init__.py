"""mz_jax: a functional MuZero in JAX/Flax.

The public contract: ``scale_gradient``, the data types (``ModelOutput``, ``MuZeroNetwork``, ``Batch``,
``Trajectory``), the jitted loss (``make_loss_fn``), the search, environments by name, and training.
Submodules hold the rest: ``networks``, ``transforms``, ``search``, ``envs``, ``actor``, ``replay``,
``targets``, ``learner``, ``train``, ``checkpoint``.
"""

from mz_jax import (
    actor,
    agent,
    envs,
    learner,
    networks,
    replay,
    search,
    targets,
    transforms,
)
from mz_jax.agent import Agent
from mz_jax.config import NetworkConfig, TrainConfig
from mz_jax.envs import Env, list_envs, make_env
from mz_jax.learner import make_data_parallel_update, make_pmap_update
from mz_jax.loss import LossAux, make_loss_fn
from mz_jax.ops import min_max_normalize, scale_gradient
from mz_jax.search import SearchConfig, SearchOutput
from mz_jax.targets import make_targets
from mz_jax.train import make_train
from mz_jax.types import Batch, ModelOutput, MuZeroNetwork, Trajectory

__version__ = "0.1.0"

__all__ = [
    "Agent",
    "Batch",
    "Env",
    "LossAux",
    "ModelOutput",
    "MuZeroNetwork",
    "NetworkConfig",
    "SearchConfig",
    "SearchOutput",
    "TrainConfig",
    "Trajectory",
    "actor",
    "agent",
    "envs",
    "learner",
    "list_envs",
    "make_data_parallel_update",
    "make_env",
    "make_loss_fn",
    "make_pmap_update",
    "make_targets",
    "make_train",
    "min_max_normalize",
    "networks",
    "replay",
    "scale_gradient",
    "search",
    "targets",
    "transforms",
]
