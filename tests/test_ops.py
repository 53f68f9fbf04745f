"""Tests of ``mz_jax.core.ops``: ``scale_gradient`` (identity forward, scaled backward) and min–max scaling.

Expected values come from hand arithmetic, from numpy, or from the MuZero pseudocode's formula
``x * scale + stop_gradient(x) * (1 - scale)`` written out below; never from the code under test.
"""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from mz_jax.core.ops import min_max_normalize, scale_gradient

FLOAT_DTYPES = [jnp.bfloat16, jnp.float16, jnp.float32]
_UINT_OF_WIDTH = {2: np.uint16, 4: np.uint32}


def pseudocode_scale_gradient(x, scale):
    """The reference: MuZero pseudocode (Appendix G), ``tf.scale_gradient`` written out."""
    return x * scale + jax.lax.stop_gradient(x) * (1 - scale)


def bits(a) -> np.ndarray:
    """The raw bit patterns of a float array, so NaN payloads, -0.0 and subnormals compare exactly."""
    a = np.asarray(a)
    return a.view(_UINT_OF_WIDTH[a.dtype.itemsize])


def special_values(dtype) -> np.ndarray:
    """±0, ±1, ±inf, NaN, the largest, the smallest normal and subnormal numbers, and a few others."""
    info = jnp.finfo(dtype)
    values = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.3,
        -1234.5,
        np.inf,
        -np.inf,
        np.nan,
        float(info.max),
        -float(info.max),
        float(info.smallest_normal),
        -float(info.smallest_normal),
        float(info.smallest_subnormal),
        -float(info.smallest_subnormal),
    ]
    return np.array([np.array(v, dtype=np.float64).astype(dtype) for v in values], dtype=dtype)


# ---------------------------------------------------------------------------------------------------
# Forward pass: x itself, bit for bit, and no arithmetic in the compiled program.


@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=lambda d: jnp.dtype(d).name)
def test_forward_is_bit_exact_identity(dtype):
    x = special_values(dtype)
    outputs = {
        "eager": scale_gradient(jnp.asarray(x), 0.5),
        "eager, scale 0": scale_gradient(jnp.asarray(x), 0.0),
        "eager, negative array scale": scale_gradient(jnp.asarray(x), jnp.float32(-3.0)),
        "jit, constant scale": jax.jit(lambda x: scale_gradient(x, 0.5))(x),
        "jit, traced scale": jax.jit(scale_gradient)(x, jnp.float32(0.3)),
    }
    for name, out in outputs.items():
        assert out.dtype == x.dtype, name
        np.testing.assert_array_equal(bits(out), bits(x), err_msg=name)


STABLEHLO_ARITHMETIC = re.compile(r"stablehlo\.(multiply|add|subtract)\b")
HLO_ARITHMETIC = re.compile(r"\b(multiply|add|subtract)\(")


def test_arithmetic_detectors_see_the_formula():
    """Positive control: the text checks below do find the arithmetic of the pseudocode's formula."""
    lowered = jax.jit(lambda x: pseudocode_scale_gradient(x, 0.5)).lower(jnp.ones(3))
    assert STABLEHLO_ARITHMETIC.search(lowered.as_text())
    assert HLO_ARITHMETIC.search(lowered.compile().as_text())


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float32], ids=lambda d: jnp.dtype(d).name)
def test_compiled_forward_has_no_arithmetic(dtype):
    x = jnp.ones((2, 3), dtype)
    for name, lowered in {
        "constant scale": jax.jit(lambda x: scale_gradient(x, 0.5)).lower(x),
        "traced scale": jax.jit(scale_gradient).lower(x, 0.3),
    }.items():
        stablehlo = lowered.as_text()
        assert not STABLEHLO_ARITHMETIC.search(stablehlo), (name, stablehlo)
        hlo = lowered.compile().as_text()
        assert "multiply" not in hlo, (name, hlo)
        assert not HLO_ARITHMETIC.search(hlo), (name, hlo)


@settings(max_examples=50, deadline=None)
@given(
    x=st.floats(width=32, allow_nan=True, allow_infinity=True),
    scale=st.floats(-4.0, 4.0, width=32),
)
def test_forward_is_identity_property(x, scale):
    x = np.float32(x)
    np.testing.assert_array_equal(bits(scale_gradient(jnp.float32(x), scale)), bits(x))


# ---------------------------------------------------------------------------------------------------
# Backward pass: cotangent times scale, in the cotangent's dtype.


def vjp_of(x, scale, cotangent):
    _, vjp = jax.vjp(lambda x: scale_gradient(x, scale), x)
    (grad,) = vjp(cotangent)
    return grad


@pytest.mark.parametrize("scale", [0.3, 0.5, -1.7, 1e-3, 7.0])
def test_backward_multiplies_cotangent_exactly(scale):
    x = jnp.zeros(6, jnp.float32)
    cotangent = np.array([1.0, -3.7, 1e-3, 123456.78, -2.5e30, 0.1], dtype=np.float32)
    expected = cotangent * np.float32(scale)  # one float32 rounding, as numpy does it
    for name, s in {"python float": scale, "float32 array": jnp.float32(scale)}.items():
        grad = vjp_of(x, s, jnp.asarray(cotangent))
        assert grad.dtype == jnp.float32, name
        np.testing.assert_array_equal(bits(grad), bits(expected), err_msg=name)


@settings(max_examples=50, deadline=None)
@given(
    cotangent=st.floats(-(2.0**100), 2.0**100, width=32),
    scale=st.floats(-10.0, 10.0, width=32),
)
def test_backward_multiplies_cotangent_exactly_property(cotangent, scale):
    expected = np.float32(cotangent) * np.float32(scale)
    # XLA on CPU flushes subnormal inputs and results to zero (numpy does not): compare normal
    # numbers only.
    normal = lambda v: v == 0 or abs(v) >= np.finfo(np.float32).smallest_normal
    assume(normal(np.float32(cotangent)) and normal(np.float32(scale)) and normal(expected))
    grad = vjp_of(jnp.float32(0.0), jnp.float32(scale), jnp.float32(cotangent))
    np.testing.assert_array_equal(bits(grad), bits(expected))


@pytest.mark.parametrize("dtype", [jnp.bfloat16, jnp.float16], ids=lambda d: jnp.dtype(d).name)
def test_backward_keeps_low_precision_dtype(dtype):
    x = jnp.zeros(4, dtype)
    cotangent = np.array([1.0, -2.5, 0.1, 300.0], dtype=np.float32).astype(dtype)
    # A float32 array scale must not promote the gradient to float32.
    grad = vjp_of(x, jnp.float32(0.3), jnp.asarray(cotangent))
    assert grad.dtype == jnp.dtype(dtype)
    expected = (cotangent.astype(np.float32) * np.float32(0.3)).astype(dtype)
    np.testing.assert_array_equal(bits(grad), bits(expected))
    # A Python float scale neither.
    grad = jax.grad(lambda x: jnp.sum(scale_gradient(x, 0.5).astype(jnp.float32)))(x)
    assert grad.dtype == jnp.dtype(dtype)
    np.testing.assert_array_equal(np.asarray(grad, np.float32), np.full(4, 0.5, np.float32))


def test_pytree_leaves_are_each_scaled():
    x = {
        "a": jnp.ones((2, 3)),
        "b": (jnp.arange(4.0), jnp.float32(2.0)),
        "c": jnp.ones((1,), jnp.bfloat16),
    }
    weights = {"a": 2.0, "b": (3.0, -1.0), "c": 4.0}

    def loss(x, scale):
        y = scale_gradient(x, scale)
        terms = jax.tree.map(lambda leaf, w: w * jnp.sum(leaf.astype(jnp.float32)), y, weights)
        return sum(jax.tree.leaves(terms))

    grads = jax.grad(loss)(x, 0.25)
    assert jax.tree.structure(grads) == jax.tree.structure(x)
    np.testing.assert_array_equal(grads["a"], np.full((2, 3), 0.5, np.float32))
    np.testing.assert_array_equal(grads["b"][0], np.full(4, 0.75, np.float32))
    np.testing.assert_array_equal(grads["b"][1], np.float32(-0.25))
    assert grads["c"].dtype == jnp.bfloat16
    np.testing.assert_array_equal(np.asarray(grads["c"], np.float32), np.ones(1, np.float32))
    # Forward: the same pytree, leaf for leaf.
    out = scale_gradient(x, 0.25)
    for leaf_out, leaf_x in zip(jax.tree.leaves(out), jax.tree.leaves(x), strict=True):
        np.testing.assert_array_equal(bits(leaf_out), bits(leaf_x))


# ---------------------------------------------------------------------------------------------------
# Scale: a Python float or a (possibly traced) scalar array that receives no gradient.

WEIGHTS = jnp.array([1.0, -2.0, 0.5], jnp.float32)


def weighted_sum(y):
    return jnp.sum(WEIGHTS * y)


def test_scale_as_jit_argument():
    traces = []

    def loss(x, s):
        traces.append(s)
        return weighted_sum(scale_gradient(x, s))

    grad_fn = jax.jit(jax.grad(loss))
    x = jnp.ones(3)
    for s in [0.5, -0.25, 0.0, 3.0]:
        expected = np.asarray(WEIGHTS) * np.float32(s)
        np.testing.assert_array_equal(grad_fn(x, jnp.float32(s)), expected)
    assert len(traces) == 1  # one trace (and compile) serves every scale


def test_scale_per_example_under_vmap():
    scales = jnp.array([0.5, -1.0, 0.0, 2.0], jnp.float32)
    x = jnp.ones((4, 3))
    expected = np.asarray(WEIGHTS)[None, :] * np.asarray(scales)[:, None]
    per_example = jax.vmap(
        jax.grad(lambda x, s: weighted_sum(scale_gradient(x, s))), in_axes=(0, 0)
    )
    np.testing.assert_array_equal(per_example(x, scales), expected)
    # And the other way round: grad of a vmapped scale_gradient.
    batched = jax.vmap(scale_gradient, in_axes=(0, 0))
    grad = jax.grad(lambda x: jnp.sum(WEIGHTS * batched(x, scales)))(x)
    np.testing.assert_array_equal(grad, expected)


def test_scale_as_scan_carry():
    def step(scale, x_t):
        return scale * 0.5, scale_gradient(x_t, scale)

    def loss(xs):
        _, ys = jax.lax.scan(step, jnp.float32(2.0), xs)
        return jnp.sum(WEIGHTS * ys)

    xs = jnp.ones((4, 3))
    expected = np.array([2.0, 1.0, 0.5, 0.25], np.float32)[:, None] * np.asarray(WEIGHTS)[None, :]
    np.testing.assert_array_equal(jax.grad(loss)(xs), expected)


def test_no_gradient_flows_to_scale():
    """Decided behaviour: the gradient w.r.t. ``scale`` is zero (it does not raise), in scale's dtype."""

    def loss(x, s):
        return jnp.sum(scale_gradient(x, s) ** 2)

    x = jnp.array([1.0, -2.0, 3.0])
    grad_x, grad_s = jax.grad(loss, argnums=(0, 1))(x, jnp.float32(0.3))
    np.testing.assert_allclose(grad_x, 2.0 * np.asarray(x) * np.float32(0.3), rtol=1e-7)
    assert grad_s.dtype == jnp.float32
    assert grad_s == 0.0
    # Python float scale, and a jacobian over a vector of scales under vmap.
    assert jax.grad(loss, argnums=1)(x, 0.3) == 0.0
    jac = jax.jacrev(lambda s: jax.vmap(scale_gradient)(jnp.ones((2, 3)), s))(jnp.ones(2))
    np.testing.assert_array_equal(jac, np.zeros((2, 3, 2), np.float32))


# ---------------------------------------------------------------------------------------------------
# Transformations: the gradient is the formula's gradient under each.


def ours_loss(x, s):
    return jnp.sum(jnp.sin(scale_gradient(x, s)) * WEIGHTS)


def formula_loss(x, s):
    return jnp.sum(jnp.sin(pseudocode_scale_gradient(x, s)) * WEIGHTS)


def by_hand_grad(x, s):
    """d/dx sum(sin(x) * w) with the gradient scaled by s: ``cos(x) * w * s``."""
    return np.cos(np.asarray(x, np.float64)) * np.asarray(WEIGHTS, np.float64) * s


X = jnp.array([[0.1, -0.7, 2.0], [1.5, 0.0, -3.0], [0.3, 0.4, 0.5], [-1.0, 1.0, 9.0]], jnp.float32)


def assert_formula_grad(grad, x, s):
    expected = np.stack([np.asarray(jax.grad(formula_loss)(row, s)) for row in x])
    np.testing.assert_allclose(grad, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad, by_hand_grad(x, s), rtol=1e-6, atol=1e-7)


def test_grad_under_jit_vmap_and_remat():
    s = 0.3
    assert_formula_grad(jax.jit(jax.vmap(jax.grad(ours_loss), in_axes=(0, None)))(X, s), X, s)
    remat = jax.vmap(jax.grad(jax.checkpoint(ours_loss)), in_axes=(0, None))
    assert_formula_grad(remat(X, s), X, s)

    # Remat around a scan body, as the unroll of the loss does it.
    def unrolled(xs, s):
        body = jax.checkpoint(lambda c, x: (c + ours_loss(x, s), None))
        return jax.lax.scan(body, jnp.float32(0.0), xs)[0]

    assert_formula_grad(jax.jit(jax.grad(unrolled))(X, jnp.float32(s)), X, s)


def test_grad_under_shard_map():
    mesh = jax.make_mesh((4,), ("data",))
    x = jax.device_put(X, NamedSharding(mesh, P("data")))
    s = jnp.float32(0.3)

    # The per-device gradient, inside shard_map, with a replicated traced scale.
    per_device = jax.shard_map(
        lambda x, s: jax.vmap(jax.grad(ours_loss), in_axes=(0, None))(x, s),
        mesh=mesh,
        in_specs=(P("data"), P()),
        out_specs=P("data"),
    )
    assert_formula_grad(jax.jit(per_device)(x, s), X, 0.3)

    # The gradient through shard_map, summed across devices with psum.
    def sharded_loss(x, s):
        def local(x, s):
            return jax.lax.psum(jnp.sum(jax.vmap(ours_loss, in_axes=(0, None))(x, s)), "data")

        return jax.shard_map(local, mesh=mesh, in_specs=(P("data"), P()), out_specs=P())(x, s)

    assert_formula_grad(jax.jit(jax.grad(sharded_loss))(x, s), X, 0.3)


def test_grad_under_pmap():
    assert jax.device_count() >= 4
    grads = jax.pmap(jax.grad(ours_loss), in_axes=(0, None))(X, 0.3)
    assert_formula_grad(grads, X, 0.3)
    # A per-device scale.
    scales = jnp.array([0.5, -1.0, 0.0, 2.0], jnp.float32)
    grads = jax.pmap(jax.grad(ours_loss))(X, scales)
    for row, s in enumerate([0.5, -1.0, 0.0, 2.0]):
        np.testing.assert_allclose(grads[row], by_hand_grad(X[row], s), rtol=1e-6, atol=1e-7)


# ---------------------------------------------------------------------------------------------------
# Special scales and composition.


def test_applied_twice_multiplies_scales():
    x = jnp.ones(3)
    grad = jax.grad(lambda x: weighted_sum(scale_gradient(scale_gradient(x, 0.5), 0.25)))(x)
    np.testing.assert_array_equal(grad, np.asarray(WEIGHTS) * np.float32(0.125))
    grad = jax.grad(lambda x: weighted_sum(scale_gradient(scale_gradient(x, 0.3), 0.7)))(x)
    np.testing.assert_allclose(grad, np.asarray(WEIGHTS, np.float64) * 0.21, rtol=1e-6)


def test_scale_zero_is_stop_gradient():
    x = jnp.array([1.0, -2.0, 3.0])
    grad = jax.grad(lambda x: jnp.sum(scale_gradient(x, 0.0) ** 2))(x)
    stopped = jax.grad(lambda x: jnp.sum(jax.lax.stop_gradient(x) ** 2))(x)
    np.testing.assert_array_equal(grad, stopped)
    np.testing.assert_array_equal(grad, np.zeros(3, np.float32))


def test_negative_scale_reverses_gradient():
    x = jnp.array([1.0, -2.0, 3.0])
    plain = 2.0 * np.asarray(x)  # d/dx sum(x**2)
    grad = jax.grad(lambda x: jnp.sum(scale_gradient(x, -1.0) ** 2))(x)
    np.testing.assert_array_equal(grad, -plain)
    grad = jax.grad(lambda x: jnp.sum(scale_gradient(x, -0.5) ** 2))(x)
    np.testing.assert_array_equal(grad, -0.5 * plain)


# ---------------------------------------------------------------------------------------------------
# Higher order: reverse over reverse works and matches the formula; forward mode raises.


def test_grad_of_grad_of_cube():
    s = 0.3

    def cube(x, scale_fn):
        return jnp.sum(scale_fn(x, s) ** 3)

    for x0 in [0.7, -1.3, 2.0]:
        ours = jax.grad(jax.grad(lambda x: cube(x, scale_gradient)))(jnp.float32(x0))
        formula = jax.grad(jax.grad(lambda x: cube(x, pseudocode_scale_gradient)))(jnp.float32(x0))
        # By hand with the formula y = x s + sg(x)(1 - s): f' = 3 y^2 s and dy/dx = s, so f'' = 6 x s^2.
        np.testing.assert_allclose(ours, 6.0 * x0 * s * s, rtol=1e-6)
        np.testing.assert_allclose(ours, formula, rtol=1e-6)


def test_grad_of_grad_of_composition_with_sin():
    s = 0.4

    def f(x, scale_fn):
        return jnp.sin(scale_fn(jnp.sin(x), s))

    for x0 in [0.3, -1.1, 2.5]:
        ours = jax.grad(jax.grad(lambda x: f(x, scale_gradient)))(jnp.float32(x0))
        formula = jax.grad(jax.grad(lambda x: f(x, pseudocode_scale_gradient)))(jnp.float32(x0))
        # By hand: f' = cos(y) s cos(x) with y = sin(x), dy/dx = s cos(x) under the formula, so
        # f'' = -sin(y) s^2 cos(x)^2 - cos(y) s sin(x).
        y = np.sin(x0)
        by_hand = -np.sin(y) * s**2 * np.cos(x0) ** 2 - np.cos(y) * s * np.sin(x0)
        np.testing.assert_allclose(ours, by_hand, rtol=1e-5, atol=1e-7)
        np.testing.assert_allclose(ours, formula, rtol=1e-6, atol=1e-7)


def test_hessian_by_reverse_over_reverse_matches_formula():
    x = jnp.array([0.5, -1.5, 2.0])
    s = jnp.float32(0.3)

    def f(x, scale_fn):
        y = scale_fn(x, s)
        return jnp.sum(y**3) + jnp.sin(y[0] * y[1]) + jnp.prod(y)

    ours = jax.jit(jax.jacrev(jax.grad(lambda x: f(x, scale_gradient))))(x)
    formula = jax.jit(jax.jacrev(jax.grad(lambda x: f(x, pseudocode_scale_gradient))))(x)
    np.testing.assert_allclose(ours, formula, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(ours, ours.T, rtol=1e-6, atol=1e-7)  # a Hessian is symmetric


@pytest.mark.parametrize(
    "forward_mode",
    [
        lambda f, x: jax.jvp(f, (x,), (jnp.ones_like(x),)),
        lambda f, x: jax.jacfwd(f)(x),
        lambda f, x: jax.hessian(lambda x: jnp.sum(f(x) ** 3))(x),  # jacfwd(jacrev)
        # linearize itself succeeds; the error comes when its linear map is applied.
        lambda f, x: jax.linearize(f, x)[1](jnp.ones_like(x)),
    ],
    ids=["jvp", "jacfwd", "hessian", "linearize"],
)
def test_forward_mode_raises(forward_mode):
    """A ``custom_vjp`` has no forward-mode rule: JAX raises a TypeError naming custom_vjp."""
    with pytest.raises(
        TypeError, match="can't apply forward-mode autodiff \\(jvp\\) to a custom_vjp"
    ):
        forward_mode(lambda x: scale_gradient(x, 0.5), jnp.ones(3))


# ---------------------------------------------------------------------------------------------------
# Why not the formula: it is not an identity in floating point.


def test_formula_rounds_where_ours_is_exact():
    candidates = np.linspace(1.0, 2.0, 101, dtype=np.float32)
    found = []
    for s in [0.1, 0.3, 1.0 / 3.0]:
        x = jnp.asarray(candidates)
        formula = np.asarray(x * s + x * (1 - s))  # eager float32, one rounding per operation
        ours = np.asarray(scale_gradient(x, s))
        np.testing.assert_array_equal(bits(ours), bits(candidates))
        found.extend((float(v), s) for v in candidates[formula != candidates])
    assert found, "expected the formula x*s + x*(1-s) to differ from x for some float32 x"


@pytest.mark.parametrize("s", [0.0, 1.0, 2.0], ids=["stop_gradient", "1/K with K=1", "above 1"])
def test_formula_turns_inf_into_nan_ours_keeps_inf(s):
    x = jnp.array([np.inf, -np.inf], jnp.float32)
    formula = pseudocode_scale_gradient(x, s)
    assert np.isnan(np.asarray(formula)).all()
    np.testing.assert_array_equal(scale_gradient(x, s), np.array([np.inf, -np.inf], np.float32))


# ---------------------------------------------------------------------------------------------------
# min_max_normalize (MuZero Appendix G: hidden state scaled to [0, 1] per example).


def test_min_max_normalize_by_hand():
    hidden = jnp.array([[1.0, 3.0, 2.0], [-2.0, 6.0, 0.0], [5.0, 5.0, 5.0]])
    expected = np.array([[0.0, 1.0, 0.5], [0.0, 1.0, 0.25], [0.0, 0.0, 0.0]], np.float32)
    out = min_max_normalize(hidden)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-7)
    # Every non-constant example spans exactly [0, 1].
    np.testing.assert_array_equal(np.min(out[:2], axis=1), [0.0, 0.0])
    np.testing.assert_array_equal(np.max(out[:2], axis=1), [1.0, 1.0])


def test_min_max_normalize_over_all_non_batch_axes():
    hidden = jnp.array(
        [[[0.0, 4.0], [2.0, 8.0]], [[-1.0, -1.0], [-1.0, -1.0]]], jnp.float32
    )  # [B=2, H=2, W=2]
    expected = np.array([[[0.0, 0.5], [0.25, 1.0]], np.zeros((2, 2))], np.float32)
    out = min_max_normalize(hidden)
    assert out.shape == (2, 2, 2)
    np.testing.assert_allclose(out, expected, rtol=0, atol=1e-7)
    assert not np.isnan(np.asarray(out)).any()  # the constant example maps to zeros, not NaN


def test_ops_same_jitted_and_unjitted():
    hidden = jnp.array([[1.0, 3.0, 2.0], [5.0, 5.0, 5.0], [-7.5, 0.1, 100.0]])
    np.testing.assert_array_equal(jax.jit(min_max_normalize)(hidden), min_max_normalize(hidden))
    x = jnp.asarray(special_values(jnp.float32))
    np.testing.assert_array_equal(
        bits(jax.jit(scale_gradient)(x, 0.5)), bits(scale_gradient(x, 0.5))
    )
    grad = jax.grad(ours_loss)
    np.testing.assert_array_equal(jax.jit(grad)(X[0], 0.3), grad(X[0], 0.3))
