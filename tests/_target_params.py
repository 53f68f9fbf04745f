"""A check shared by the MuZero and Stochastic MuZero losses: target parameters only encode the
consistency term's targets."""

import jax
import numpy as np


def assert_target_params_only_encode_targets(loss_fn, params, target_params, batch):
    """No gradient reaches ``target_params`` through ``loss_fn(params, batch, target_params)``, and
    the gradient of ``params`` is that of the two-argument loss when the target parameters are
    ``params`` themselves."""
    grad_target = jax.jit(jax.grad(lambda t: loss_fn(params, batch, t)[0]))(target_params)
    for name in target_params:
        np.testing.assert_array_equal(grad_target[name], 0.0, err_msg=name)
    same = jax.jit(jax.grad(lambda p: loss_fn(p, batch, params)[0]))(params)
    plain = jax.jit(jax.grad(lambda p: loss_fn(p, batch)[0]))(params)
    for name in params:
        np.testing.assert_allclose(same[name], plain[name], rtol=1e-6, atol=1e-7, err_msg=name)
