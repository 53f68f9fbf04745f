"""mz_jax: a functional MuZero in JAX/Flax."""

from mz_jax import transforms
from mz_jax.ops import min_max_normalize, scale_gradient
from mz_jax.types import Batch, ModelOutput, MuZeroNetwork, Trajectory

__version__ = "0.1.0"

__all__ = [
    "Batch",
    "ModelOutput",
    "MuZeroNetwork",
    "Trajectory",
    "min_max_normalize",
    "scale_gradient",
    "transforms",
]
