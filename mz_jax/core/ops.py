"""Small differentiable operations used by the MuZero model: ``scale_gradient``, hidden-state scaling,
and the reset of a value-prefix network's LSTM carry."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from mz_jax.types import Array


@jax.custom_vjp
def _scale_gradient(x, scale):
    return x


def _scale_gradient_fwd(x, scale):
    # The primal output is produced by the custom function itself (not returned as ``x``), so that
    # differentiating the backward pass again (grad of grad) sees the scaled op and agrees with the
    # pseudocode's ``x * scale + stop_gradient(x) * (1 - scale)``.
    return _scale_gradient(x, scale), scale


def _scale_cotangent(g, scale):
    # An integer leaf (differentiated with ``allow_int=True``) has a float0 cotangent: it carries no
    # gradient and supports no arithmetic, so it passes through as it is.
    if g.dtype == jax.dtypes.float0:
        return g
    return (g * scale).astype(g.dtype)


def _scale_gradient_bwd(scale, cotangent):
    scaled = jax.tree.map(lambda g: _scale_cotangent(g, scale), cotangent)
    # ``None``: no cotangent flows to ``scale`` (and none of a foreign dtype is created).
    return scaled, None


_scale_gradient.defvjp(_scale_gradient_fwd, _scale_gradient_bwd)


def scale_gradient(x, scale: float | Array):
    """Identity on the forward pass; multiplies the gradient by ``scale`` on the backward pass.

    This is the ``tf.scale_gradient`` of the MuZero pseudocode (Schrittwieser et al., 2020, Appendix G),
    which uses it twice: to halve the gradient entering the dynamics function at each unrolled step, and
    to scale each unrolled step's loss by ``1/K``. Unlike the formula
    ``x * scale + stop_gradient(x) * (1 - scale)`` it returns ``x`` bit-exactly (``inf`` stays ``inf``),
    adds no arithmetic to the compiled forward pass, and keeps the cotangent's dtype (bf16 in, bf16 out).

    Args:
      x: a pytree of arrays. Floating-point leaves get their gradient scaled; integer or bool leaves
        (differentiable only under ``jax.grad(..., allow_int=True)``, where their cotangent is
        ``float0``) pass through with their ``float0`` cotangent unchanged.
      scale: a Python float or a scalar array; it may be traced (a jit argument, a per-example value
        under ``vmap``, a ``scan`` carry). It receives no gradient. ``0`` gives the gradients of
        ``stop_gradient``; a negative scale reverses the gradient.

    Returns:
      ``x`` unchanged.

    Forward-mode differentiation (``jax.jvp``, ``jax.jacfwd``) is not defined for a ``custom_vjp`` and
    raises a ``TypeError``; reverse mode, including grad of grad, is supported.
    """
    return _scale_gradient(x, scale)


def min_max_normalize(hidden: Array, eps: float = 1e-5) -> Array:
    """Scales each example of ``hidden[B, ...]`` to ``[0, 1]`` over all of its non-batch axes.

    MuZero Appendix G: the hidden state is scaled to the range of the action input. ``eps`` guards a
    constant hidden state (whose range is 0), which maps to all zeros.
    """
    axes = tuple(range(1, hidden.ndim))
    low = jnp.min(hidden, axis=axes, keepdims=True)
    high = jnp.max(hidden, axis=axes, keepdims=True)
    return (hidden - low) / jnp.maximum(high - low, eps)


def reset_reward_carry(hidden: Any, reset: Array | bool) -> Any:
    """A value-prefix network's hidden state ``(state, reward_carry)`` with ``reward_carry`` zeroed
    where ``reset`` (a bool scalar or ``[B]``)."""
    state, carry = hidden

    def zero_where(x):
        where = jnp.reshape(reset, jnp.shape(reset) + (1,) * (x.ndim - jnp.ndim(reset)))
        return jnp.where(where, jnp.zeros_like(x), x)

    return state, jax.tree.map(zero_where, carry)
