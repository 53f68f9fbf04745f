"""Value and reward transforms of MuZero (Appendix F): ``h``, its inverse, and the categorical support.

MuZero trains values and rewards as categorical distributions: a scalar ``x`` is squashed by
``h(x) = sign(x)(sqrt(|x| + 1) - 1) + eps * x`` (Pohlen et al., 2018) and projected two-hot onto the
integer support ``[-S, S]``; a prediction is decoded as ``h^-1(sum_i p_i * i)``. As an option of the
loss, a value target may instead be spread over the support by a normal (HL-Gauss,
:func:`scalar_to_gaussian`).

Both ``h`` and ``h^-1`` are written without catastrophic cancellation, so a float32 round trip stays within
1e-4 relative error for ``|x|`` in ``[1e-3, 1e5]`` (rlax's ``signed_parabolic(signed_hyperbolic(x))``
loses two digits at ``x = 1e-3``). The two-hot projection is our own and exact: rlax's
``transform_to_2hot`` divides by ``width + 1e-5`` and finds the bin through a rounding rescale, so its
expectation is off by up to 1e-5 (2% at ``x = 1e-3`` after ``h^-1``), and on 601 bins it gives
non-one-hot rows for integers and negative weights.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
from jax.scipy.special import erf

from mz_jax.types import Array

DEFAULT_EPS = 1e-3


def h(x: Array, eps: float = DEFAULT_EPS) -> Array:
    """``sign(x)(sqrt(|x| + 1) - 1) + eps * x``, with ``sqrt(|x| + 1) - 1 = |x| / (sqrt(|x| + 1) + 1)``."""
    abs_x = jnp.abs(x)
    return jnp.sign(x) * abs_x / (jnp.sqrt(abs_x + 1.0) + 1.0) + eps * x


def h_inv(y: Array, eps: float = DEFAULT_EPS) -> Array:
    """The inverse of :func:`h`.

    For ``a = |y|`` and ``w = sqrt(|x| + 1) - 1``, ``h`` gives ``eps * w**2 + (1 + 2 eps) * w - a = 0``,
    whose positive root ``w = 2a / ((1 + 2 eps) + sqrt((1 + 2 eps)**2 + 4 eps a))`` adds only positive
    terms; then ``|x| = w * (w + 2)``.
    """
    abs_y = jnp.abs(y)
    b = 1.0 + 2.0 * eps
    w = 2.0 * abs_y / (b + jnp.sqrt(b * b + 4.0 * eps * abs_y))
    return jnp.sign(y) * w * (w + 2.0)


def support_size_from_bins(num_bins: int) -> int:
    """``S`` for a support ``[-S, S]`` of ``num_bins = 2S + 1`` bins; raises for an even or small count."""
    if num_bins < 3 or num_bins % 2 == 0:
        raise ValueError(
            f"a categorical support [-S, S] has 2S + 1 bins with S >= 1 (3, 5, 7, ...); got {num_bins} bins"
        )
    return (num_bins - 1) // 2


def scalar_to_two_hot(x: Array, support_size: int) -> Array:
    """Projects ``x[...]`` (already transformed) onto the integer support ``[-S, S]``: ``[..., 2S + 1]``.

    Values outside the support are clipped to its ends. A NaN input gives a NaN row. The weights are
    non-negative, sum to 1, and their expectation is ``x`` up to one rounding; integers give one-hot rows.
    """
    num_bins = 2 * support_size + 1
    s = float(support_size)
    y = jnp.clip(x, -s, s)
    # Split |y| rather than y: |y| - floor(|y|) is exact (Sterbenz), y - floor(y) is not for y in (-1, 0).
    magnitude = jnp.abs(y)
    lower = jnp.floor(magnitude)
    upper_weight = magnitude - lower
    sign = jnp.where(y < 0, -1, 1)
    lower_index = support_size + sign * lower.astype(jnp.int32)
    # At |y| = S the upper index falls off the support; one_hot gives a zero row there (and weight 0).
    lower_one_hot = jax.nn.one_hot(lower_index, num_bins, dtype=y.dtype)
    upper_one_hot = jax.nn.one_hot(lower_index + sign, num_bins, dtype=y.dtype)
    two_hot = (
        lower_one_hot * (1.0 - upper_weight)[..., None] + upper_one_hot * upper_weight[..., None]
    )
    # Under jit XLA turns ``one_hot * w`` into a select, which drops a NaN weight: keep NaN visible.
    return jnp.where(jnp.isnan(y)[..., None], jnp.nan, two_hot)


def two_hot_to_scalar(probs: Array) -> Array:
    """``sum_i p_i * i`` over the integer support ``[-S, S]`` given by ``probs``' last axis."""
    support_size = support_size_from_bins(probs.shape[-1])
    support = jnp.arange(-support_size, support_size + 1, dtype=probs.dtype)
    return jnp.sum(probs * support, axis=-1)


def scalar_to_gaussian(x: Array, support_size: int, sigma: float) -> Array:
    """HL-Gauss (Farebrother et al., 2024, "Stop Regressing"): the mass a normal ``N(y, sigma^2)``,
    ``y = clip(x, -S, S)`` (``x`` already transformed), puts on each bin ``[i - 1/2, i + 1/2]`` of the
    integer support ``[-S, S]``, renormalised over ``[-S - 1/2, S + 1/2]``. ``[...] -> [..., 2S + 1]``.

    ``sigma > 0`` is in bins (the paper's ``sigma / zeta``, 0.75 there). Where the normal reaches past
    the support's ends the renormalised expectation leans towards the middle; elsewhere it is ``y``
    within about ``exp(-2 pi^2 sigma^2) / pi`` (5e-6 at 0.75 bins, 0.002 at 0.5). A NaN input gives
    a NaN row.
    """
    if not (math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be a finite number > 0 (in bins); got {sigma!r}")
    s = float(support_size)
    y = jnp.clip(x, -s, s)[..., None]
    edges = jnp.arange(2 * support_size + 2, dtype=y.dtype) - (s + 0.5)
    cdf = erf((edges - y) / (sigma * math.sqrt(2.0)))
    # Far in a tail both edges' erf round to the same float32 near +-1, and float32 erf is monotone
    # only to within an ulp there: a difference can come out at -6e-8. Such a bin holds no mass.
    mass = jnp.maximum(cdf[..., 1:] - cdf[..., :-1], 0.0)
    return mass / jnp.sum(mass, axis=-1, keepdims=True)


def scalar_to_support(
    x: Array, support_size: int, eps: float = DEFAULT_EPS, sigma: float = 0.0
) -> Array:
    """The categorical target ``phi(x)``: ``h``, then two-hot onto ``[-S, S]`` (MuZero) or, with
    ``sigma > 0``, spread by a normal of ``sigma`` bins (:func:`scalar_to_gaussian`).
    ``[...] -> [..., 2S + 1]``."""
    if sigma == 0:
        return scalar_to_two_hot(h(x, eps), support_size)
    return scalar_to_gaussian(h(x, eps), support_size, sigma)


def logits_to_scalar(logits: Array, eps: float = DEFAULT_EPS) -> Array:
    """Decodes value or reward logits ``[..., 2S + 1]`` to scalars ``[...]``: ``h^-1(E_softmax[i])``."""
    probs = jax.nn.softmax(logits.astype(jnp.float32), axis=-1)
    return h_inv(two_hot_to_scalar(probs), eps)


def support_size_for(bound: float, *, minimum: int = 1, eps: float = DEFAULT_EPS) -> int:
    """The smallest ``S >= minimum`` whose support ``[-S, S]`` represents every ``|x| <= bound``:
    ``ceil(h(bound))``. ``bound`` is a finite number >= 0."""
    if not (math.isfinite(bound) and bound >= 0):
        raise ValueError(f"bound must be a finite number >= 0; got {bound!r}")
    return max(int(minimum), math.ceil(float(h(jnp.float32(bound), eps))))


def clipped(x: Array, support_size: int, eps: float = DEFAULT_EPS) -> Array:
    """Bool ``[...]``: where ``phi(x)`` is clipped, i.e. ``|h(x)| > S``; the target then reads as
    ``h^-1(±S)`` instead of ``x``."""
    return jnp.abs(h(x, eps)) > support_size
