"""Tests of ``mz_jax.core.transforms``: h, h⁻¹, the two-hot projection and the categorical decode.

Expected values are worked by hand, computed by float64 numpy references written in the textbook form,
or stated as properties; never computed by the code under test.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rlax
from hypothesis import given, settings
from hypothesis import strategies as st

from mz_jax.core import transforms

EPS = 1e-3
FAST = settings(max_examples=50, deadline=None)
# Hypothesis floats must be exactly representable in float32 at the bounds.
finite_float32 = functools.partial(st.floats, allow_nan=False, allow_infinity=False, width=32)


def h_reference64(x):
    """Textbook h in float64: ``sign(x)(sqrt(|x| + 1) - 1) + eps x``."""
    x = np.asarray(x, np.float64)
    return np.sign(x) * (np.sqrt(np.abs(x) + 1.0) - 1.0) + EPS * x


def h_inv_reference64(y):
    """Textbook h⁻¹ in float64 (Pohlen et al. 2018, Proposition A.2)."""
    y = np.asarray(y, np.float64)
    root = (np.sqrt(1.0 + 4.0 * EPS * (np.abs(y) + 1.0 + EPS)) - 1.0) / (2.0 * EPS)
    return np.sign(y) * (root**2 - 1.0)


# Jitted once per shape: un-jitted, each primitive compiles on its own for every new shape, which is
# slow on a busy CPU. The un-jitted path is covered by test_same_jitted_and_unjitted.
two_hot = jax.jit(transforms.scalar_to_two_hot, static_argnums=1)
scalar_to_support = jax.jit(transforms.scalar_to_support, static_argnums=1)
logits_to_scalar = jax.jit(transforms.logits_to_scalar)


def relative_error(actual, expected):
    actual = np.asarray(actual, np.float64)
    expected = np.asarray(expected, np.float64)
    return np.abs(actual - expected) / np.abs(expected)


# ---------------------------------------------------------------------------------------------------
# h and h⁻¹.

# (x, h(x)) worked by hand: sqrt(|x| + 1) is a whole number or a short decimal for each x.
HAND_PAIRS = [
    (0.0, 0.0),
    (3.0, 2.0 - 1.0 + 0.003),  # sqrt(4) = 2
    (-8.0, -(3.0 - 1.0) - 0.008),  # sqrt(9) = 3
    (99.0, 10.0 - 1.0 + 0.099),  # sqrt(100) = 10
    (-0.21, -(1.1 - 1.0) - 0.00021),  # sqrt(1.21) = 1.1
    (0.44, 1.2 - 1.0 + 0.00044),  # sqrt(1.44) = 1.2
    (9999.0, 100.0 - 1.0 + 9.999),  # sqrt(10000) = 100
]


@pytest.mark.parametrize(("x", "y"), HAND_PAIRS)
def test_h_by_hand(x, y):
    out = transforms.h(jnp.float32(x))
    assert out.dtype == jnp.float32
    np.testing.assert_allclose(out, y, rtol=1e-6, atol=0)


@pytest.mark.parametrize(("x", "y"), HAND_PAIRS)
def test_h_inv_by_hand(x, y):
    np.testing.assert_allclose(transforms.h_inv(jnp.float32(y)), x, rtol=1e-6, atol=0)


def test_h_and_h_inv_at_zero_are_exactly_zero():
    assert transforms.h(jnp.float32(0.0)) == 0.0
    assert transforms.h_inv(jnp.float32(0.0)) == 0.0


@FAST
@given(x=finite_float32(min_value=-(2.0**100), max_value=2.0**100))
def test_h_and_h_inv_are_odd(x):
    x = jnp.float32(x)
    assert transforms.h(-x) == -transforms.h(x)
    assert transforms.h_inv(-x) == -transforms.h_inv(x)


@FAST
@given(
    a=finite_float32(min_value=-(2.0**24), max_value=2.0**24),
    b=finite_float32(min_value=-(2.0**24), max_value=2.0**24),
)
def test_h_and_h_inv_are_monotonic(a, b):
    low, high = jnp.float32(min(a, b)), jnp.float32(max(a, b))
    assert transforms.h(low) <= transforms.h(high)
    assert transforms.h_inv(low) <= transforms.h_inv(high)
    if high - low > 1e-5 * max(1.0, abs(float(low)), abs(float(high))):
        assert transforms.h(low) < transforms.h(high)
        assert transforms.h_inv(low) < transforms.h_inv(high)


def test_h_and_h_inv_are_monotonic_on_a_dense_grid():
    grid = np.geomspace(1e-6, 1e7, 50_001).astype(np.float32)
    grid = np.concatenate([-grid[::-1], [0.0], grid]).astype(np.float32)
    for fn in (transforms.h, transforms.h_inv):
        assert (np.diff(np.asarray(fn(jnp.asarray(grid)))) >= 0).all(), fn.__name__


def dense_grid_both_signs(low=1e-3, high=1e5, num=20_001):
    grid = np.geomspace(low, high, num).astype(np.float32)
    return np.concatenate([-grid, grid])


def test_round_trip_within_1e_4_relative():
    x = dense_grid_both_signs()
    round_trip = transforms.h_inv(transforms.h(jnp.asarray(x)))
    assert round_trip.dtype == jnp.float32
    assert relative_error(round_trip, x).max() <= 1e-4


def test_rlax_round_trip_misses_1e_4_where_ours_meets_it():
    """The shortfall that justifies our own h and h⁻¹ (STYLE practice 6)."""
    x = jnp.float32(1e-3)
    theirs = rlax.signed_parabolic(rlax.signed_hyperbolic(x))
    ours = transforms.h_inv(transforms.h(x))
    assert relative_error(theirs, 1e-3) > 1e-4  # about 2.3e-2 on CPU
    assert relative_error(ours, 1e-3) <= 1e-6


def test_h_matches_float64_reference():
    x = dense_grid_both_signs(1e-6, 1e6, 4_001)
    ours = transforms.h(jnp.asarray(x))
    assert relative_error(ours, h_reference64(x)).max() <= 1e-6


def test_h_inv_matches_float64_textbook_reference():
    # Feed both the same float32 y = h(x), so only h⁻¹'s own error is measured. For |y| >= 1e-6 the
    # float64 textbook form loses at most ~1e-10 to its own cancellation.
    y = np.asarray(transforms.h(jnp.asarray(dense_grid_both_signs(1e-5, 1e6, 4_001))))
    ours = transforms.h_inv(jnp.asarray(y))
    assert relative_error(ours, h_inv_reference64(y)).max() <= 2e-6


# ---------------------------------------------------------------------------------------------------
# Two-hot projection onto the integer support [-S, S] (bin i holds the value i - S).


def one_row(support_size, weights_by_value):
    row = np.zeros(2 * support_size + 1, np.float32)
    for value, weight in weights_by_value.items():
        row[value + support_size] = weight
    return row


@pytest.mark.parametrize(
    ("x", "weights_by_value"),
    [
        (1.3, {1: 0.7, 2: 0.3}),
        (-1.3, {-1: 0.7, -2: 0.3}),
        (0.5, {0: 0.5, 1: 0.5}),
        (-0.25, {0: 0.75, -1: 0.25}),
        (2.75, {2: 0.25, 3: 0.75}),
        (-2.9, {-2: 0.1, -3: 0.9}),
        (3.0, {3: 1.0}),
        (0.0, {0: 1.0}),
    ],
)
def test_two_hot_by_hand(x, weights_by_value):
    probs = two_hot(jnp.float32(x), 3)
    assert probs.shape == (7,)
    np.testing.assert_allclose(probs, one_row(3, weights_by_value), rtol=0, atol=1e-6)


def test_two_hot_batched_shape():
    probs = two_hot(jnp.array([[1.3, -0.25], [0.0, 3.0]]), 3)
    assert probs.shape == (2, 2, 7)
    np.testing.assert_allclose(probs[0, 0], one_row(3, {1: 0.7, 2: 0.3}), atol=1e-6)
    np.testing.assert_allclose(probs[1, 1], one_row(3, {3: 1.0}), atol=1e-6)


@pytest.mark.parametrize("x", [3.5, 10.0, 1e30, np.inf, -3.5, -10.0, -1e30, -np.inf])
def test_two_hot_clips_outside_support(x):
    end = 3 if x > 0 else -3
    probs = two_hot(jnp.float32(x), 3)
    np.testing.assert_array_equal(probs, one_row(3, {end: 1.0}))


@pytest.mark.parametrize("support_size", [1, 3, 10, 300])
def test_two_hot_of_integers_is_one_hot(support_size):
    integers = jnp.arange(-support_size, support_size + 1, dtype=jnp.float32)
    probs = two_hot(integers, support_size)
    np.testing.assert_array_equal(probs, np.eye(2 * support_size + 1, dtype=np.float32))


def test_two_hot_of_nan_is_a_nan_row():
    # Both ways: under jit XLA rewrites ``one_hot * weight`` into a select that would drop the NaN.
    assert np.isnan(np.asarray(two_hot(jnp.float32(np.nan), 3))).all()
    assert np.isnan(np.asarray(transforms.scalar_to_two_hot(jnp.float32(np.nan), 3))).all()
    rows = np.asarray(scalar_to_support(jnp.array([1.0, np.nan]), 3))
    assert not np.isnan(rows[0]).any() and np.isnan(rows[1]).all()


@FAST
@given(
    support_size=st.sampled_from([1, 3, 300]), fraction=finite_float32(min_value=-2, max_value=2)
)
def test_two_hot_is_a_distribution_with_the_clipped_input_as_mean(support_size, fraction):
    x = np.float32(fraction * support_size)
    probs = np.asarray(two_hot(jnp.float32(x), support_size), np.float64)
    assert (probs >= 0).all()
    assert np.count_nonzero(probs) <= 2
    np.testing.assert_allclose(probs.sum(), 1.0, rtol=0, atol=1e-6)
    support = np.arange(-support_size, support_size + 1, dtype=np.float64)
    expected = np.clip(np.float64(x), -support_size, support_size)
    np.testing.assert_allclose(probs @ support, expected, rtol=1e-6, atol=1e-6)


def test_rlax_two_hot_is_not_exact_where_ours_is():
    """Why the two-hot is ours (STYLE practice 6): rlax divides by ``width + 1e-5`` and rescales."""
    support = np.arange(-3, 4, dtype=np.float64)
    theirs = np.asarray(rlax.transform_to_2hot(jnp.float32(1.3), -3.0, 3.0, 7), np.float64)
    ours = np.asarray(two_hot(jnp.float32(1.3), 3), np.float64)
    assert abs(theirs @ support - 1.3) > 5e-6
    assert abs(ours @ support - 1.3) < 1e-6
    # On the usual 601 bins, rlax gives integers rows that are not one-hot, with negative weights.
    integers = jnp.arange(-300, 301, dtype=jnp.float32)
    theirs = np.asarray(rlax.transform_to_2hot(integers, -300.0, 300.0, 601))
    assert (theirs != np.eye(601, dtype=np.float32)).any()
    assert theirs.min() < 0


def test_two_hot_to_scalar_by_hand():
    probs = jnp.array([[0.2, 0.3, 0.5], [0.0, 0.0, 1.0]])
    np.testing.assert_allclose(transforms.two_hot_to_scalar(probs), [0.3, 1.0], atol=1e-7)
    probs = jnp.asarray(one_row(3, {-2: 0.25, 1: 0.75}))
    np.testing.assert_allclose(transforms.two_hot_to_scalar(probs), 0.25, atol=1e-7)


# ---------------------------------------------------------------------------------------------------
# phi and its decode: logits_to_scalar(log(phi(x))) recovers x inside the support's range.


@FAST
@given(support_size=st.sampled_from([5, 300]), fraction=finite_float32(min_value=-1, max_value=1))
def test_decode_of_log_support_recovers_scalar(support_size, fraction):
    # The largest |x| with |h(x)| <= S, from the float64 textbook inverse, shrunk a little.
    x_max = 0.999 * float(h_inv_reference64(support_size))
    x = np.float32(fraction * x_max)
    target = scalar_to_support(jnp.float32(x), support_size)
    assert target.shape == (2 * support_size + 1,)
    decoded = logits_to_scalar(jnp.log(target))  # log(0) = -inf: a zero probability
    assert decoded.dtype == jnp.float32
    np.testing.assert_allclose(decoded, x, rtol=1e-5, atol=1e-6)


def test_decode_by_hand():
    # Probabilities 0.997 on value 1 and 0.003 on value 2: E = 1.003 = h(3), so the decode is 3.
    # A one-hot at 0, and uniform logits, both have E = 0.
    logits = jnp.log(
        jnp.asarray(np.stack([one_row(3, {1: 0.997, 2: 0.003}), one_row(3, {0: 1.0})]))
    )
    np.testing.assert_allclose(logits_to_scalar(logits), [3.0, 0.0], rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(logits_to_scalar(jnp.zeros((2, 7))), [0.0, 0.0], atol=1e-6)
    # Softmax of logits [0, log 3] on values 1 and 2 (others -inf): p = [1/4, 3/4], E = 1.75; then the
    # textbook inverse of h at 1.75.
    logits = jnp.array([-np.inf, -np.inf, -np.inf, -np.inf, 0.0, np.log(3.0), -np.inf], jnp.float32)
    np.testing.assert_allclose(logits_to_scalar(logits), h_inv_reference64(1.75), rtol=2e-6)


@pytest.mark.parametrize("num_bins", [-1, 0, 1, 2, 4, 6, 600])
def test_support_size_from_bins_rejects_even_or_small(num_bins):
    with pytest.raises(ValueError, match="2S \\+ 1 bins"):
        transforms.support_size_from_bins(num_bins)


@pytest.mark.parametrize(("num_bins", "support_size"), [(3, 1), (5, 2), (21, 10), (601, 300)])
def test_support_size_from_bins(num_bins, support_size):
    assert transforms.support_size_from_bins(num_bins) == support_size


def test_two_hot_to_scalar_rejects_an_even_support():
    with pytest.raises(ValueError):
        transforms.two_hot_to_scalar(jnp.ones(4) / 4)


# ---------------------------------------------------------------------------------------------------
# Every op jitted and un-jitted (rlax style). XLA fuses the jitted program, so sqrt/divide results may
# differ in the last bit; the two-hot projection is exact in both.

SCALARS = np.concatenate([-np.geomspace(1e-4, 1e6, 64), [0.0], np.geomspace(1e-4, 1e6, 64)]).astype(
    np.float32
)
LOGITS = np.asarray(3.0 * jax.random.normal(jax.random.key(0), (8, 11)), np.float32)
PROBS = np.asarray(jax.nn.softmax(LOGITS), np.float32)


@pytest.mark.parametrize(
    ("op", "inputs", "rtol"),
    [
        (transforms.h, SCALARS, 1e-6),
        (transforms.h_inv, SCALARS, 1e-6),
        (functools.partial(transforms.scalar_to_two_hot, support_size=5), SCALARS / 1e5, 0),
        (functools.partial(transforms.scalar_to_support, support_size=5), SCALARS, 0),
        (transforms.two_hot_to_scalar, PROBS, 1e-6),
        (transforms.logits_to_scalar, LOGITS, 1e-6),
    ],
    ids=["h", "h_inv", "scalar_to_two_hot", "scalar_to_support", "two_hot_to_scalar", "decode"],
)
def test_same_jitted_and_unjitted(op, inputs, rtol):
    eager = op(jnp.asarray(inputs))
    jitted = jax.jit(op)(jnp.asarray(inputs))
    assert eager.dtype == jitted.dtype and eager.shape == jitted.shape
    np.testing.assert_allclose(jitted, eager, rtol=rtol, atol=1e-7 if rtol else 0)


# --- HL-Gauss ------------------------------------------------------------------------------------


def gaussian_reference64(y, support_size, sigma, points=2001):
    """The normal density ``N(clip(y), sigma^2)`` integrated over each bin ``[i - 1/2, i + 1/2]`` by
    Simpson's rule in float64 (no erf), then divided by the mass over the whole support."""
    y = np.clip(np.float64(y), -support_size, support_size)
    rows = []
    for i in range(-support_size, support_size + 1):
        t = np.linspace(i - 0.5, i + 0.5, points)
        f = np.exp(-0.5 * ((t - y) / sigma) ** 2) / (sigma * np.sqrt(2 * np.pi))
        step = t[1] - t[0]
        rows.append(step / 3 * (f[0] + f[-1] + 4 * f[1:-1:2].sum() + 2 * f[2:-1:2].sum()))
    rows = np.asarray(rows)
    return rows / rows.sum()


@pytest.mark.parametrize("sigma", [0.3, 0.75, 2.0])
@pytest.mark.parametrize("y", [0.0, 0.37, -2.5, 4.9, 5.0, 7.0, -11.0])
def test_gaussian_matches_the_integrated_normal(y, sigma):
    probs = np.asarray(transforms.scalar_to_gaussian(jnp.float32(y), 5, sigma), np.float64)
    np.testing.assert_allclose(probs, gaussian_reference64(y, 5, sigma), rtol=0, atol=2e-6)


@FAST
@given(y=finite_float32(min_value=-6, max_value=6), sigma=st.sampled_from([0.75, 1.0]))
def test_gaussian_mean_is_the_input_away_from_the_ends(y, sigma):
    # With the support at least 4 sigma beyond y on both sides the renormalisation moves nothing,
    # and binning a normal shifts its mean by at most about exp(-2 pi^2 sigma^2) / pi (Poisson
    # summation): 5e-6 at 0.75 bins (0.0023 at 0.5, where this bound would fail).
    probs = np.asarray(transforms.scalar_to_gaussian(jnp.float32(y), 10, sigma), np.float64)
    assert (probs >= 0).all()
    np.testing.assert_allclose(probs.sum(), 1.0, atol=1e-6)
    np.testing.assert_allclose(probs @ np.arange(-10, 11), y, atol=2e-4)


@pytest.mark.parametrize("sigma", [0.75, 1.0])
def test_gaussian_has_no_negative_bin_anywhere(sigma):
    # Far in a tail both edges of a bin round to the same float32 erf, up to an ulp either way;
    # hypothesis once found y = 1.4470187 (sigma 0.75) giving a bin of -6e-8. A dense grid of
    # inputs hits such bins on more than a hundred of its points unless they are clamped at 0.
    ys = jnp.linspace(-6.0, 6.0, 40_001, dtype=jnp.float32)
    probs = np.asarray(transforms.scalar_to_gaussian(ys, 10, sigma))
    assert probs.min() >= 0.0
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-6)


def test_gaussian_is_a_distribution_at_the_ends_and_leans_inwards():
    probs = np.asarray(transforms.scalar_to_gaussian(jnp.array([3.0, 40.0, -3.0]), 3, 0.75))
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-6)
    np.testing.assert_array_equal(probs[0], probs[1])  # clipped to S first
    np.testing.assert_allclose(probs[2], probs[0][::-1], atol=1e-7)  # mirror image
    mean = probs[0] @ np.arange(-3, 4)
    assert 2.0 < mean < 3.0


def test_gaussian_of_nan_is_a_nan_row_and_sigma_must_be_positive():
    assert np.isnan(np.asarray(transforms.scalar_to_gaussian(jnp.float32(np.nan), 3, 0.75))).all()
    for sigma in (0.0, -1.0, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="sigma must be a finite number > 0"):
            transforms.scalar_to_gaussian(jnp.float32(1.0), 3, sigma)


def test_scalar_to_support_with_sigma_spreads_the_h_transformed_target():
    x = 30.0  # h(30) = sqrt(31) - 1 + 0.03
    expected = gaussian_reference64(np.sqrt(31.0) - 1.0 + 0.03, 10, 0.75)
    actual = np.asarray(transforms.scalar_to_support(jnp.float32(x), 10, sigma=0.75), np.float64)
    np.testing.assert_allclose(actual, expected, atol=2e-6)
