"""Parameters moved off their initial values, so that no layer (the zero-initialised heads
included) outputs zeros."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np


def perturb(params, seed: int, scale: float = 0.3):
    """``params`` plus Gaussian noise of standard deviation ``scale`` (numpy's generator of
    ``seed``: jax.random would compile a sampler for every parameter shape), dtypes kept."""
    rng = np.random.default_rng(seed)
    return jax.tree.map(
        lambda x: x + jnp.asarray(scale * rng.normal(size=x.shape), x.dtype), params
    )
