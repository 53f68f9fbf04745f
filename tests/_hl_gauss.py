"""The HL-Gauss value target written independently of ``mz_jax.core.transforms`` (no erf), for the loss
references of tests/test_loss.py and tests/test_stochastic_loss.py."""

import jax.numpy as jnp


def reference_phi_gauss(x, num_bins, sigma, eps=0.001, points=401):
    """HL-Gauss target by quadrature: h, clip, then the normal density integrated over each bin by
    Simpson's rule (no erf) and divided by the mass over the whole support."""
    support = (num_bins - 1) // 2
    y = jnp.sign(x) * (jnp.sqrt(jnp.abs(x) + 1) - 1) + eps * x
    y = jnp.clip(y, -support, support)
    centres = jnp.arange(-support, support + 1, dtype=jnp.float32)
    t = centres[:, None] + jnp.linspace(-0.5, 0.5, points)[None, :]
    f = jnp.exp(-0.5 * ((t - y) / sigma) ** 2)
    simpson = jnp.ones(points).at[1:-1:2].set(4.0).at[2:-1:2].set(2.0)
    mass = f @ simpson
    return mass / jnp.sum(mass)
