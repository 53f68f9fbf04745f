"""Sampled MuZero's maths (``mz_jax.core.sampled``) against independent references.

Densities against a change of variables in float64 (scipy's normal density, the squash's derivative
by central differences) and a quadrature over the Box; probabilities and priors by hand; samplers by
their frequencies over many draws (within 5 standard errors); gradients by hand or against finite
differences. No expected value calls the code under test.
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from mz_jax.core import sampled

BOXES = {
    "1d": (np.array([-1.0]), np.array([1.0])),
    "1d_asymmetric": (np.array([-2.0]), np.array([1.0])),
    "2d": (np.array([-2.0, 0.0]), np.array([1.0, 3.0])),
}


def squash(u, low, high):
    return low + (np.tanh(u) + 1.0) / 2.0 * (high - low)


def reference_log_prob(mean, std, actions, low, high):
    """``[..., K]``: scipy's normal log-density at the unsquashed action, minus the log of the
    squash's derivative taken by central differences, in float64."""
    a = np.asarray(actions, np.float64)
    u = np.arctanh(2.0 * (a - low) / (high - low) - 1.0)
    step = 1e-5
    derivative = (squash(u + step, low, high) - squash(u - step, low, high)) / (2.0 * step)
    mean, std = np.expand_dims(mean, -2), np.expand_dims(std, -2)
    return np.sum(stats.norm.logpdf(u, mean, std) - np.log(derivative), axis=-1)


def within_standard_errors(frequency, probability, num_draws, errors=5.0):
    standard_error = np.sqrt(probability * (1.0 - probability) / num_draws)
    np.testing.assert_array_less(np.abs(frequency - probability), errors * standard_error + 1e-9)


# The squashed Gaussian.


@pytest.mark.parametrize("box", BOXES)
def test_squashed_gaussian_log_prob_matches_change_of_variables(box):
    low, high = BOXES[box]
    size = low.shape[0]
    rng = np.random.default_rng(0)
    mean = rng.normal(0.0, 0.5, (2, size))  # two batch rows
    std = rng.uniform(0.3, 0.8, (2, size))
    u = rng.normal(mean[:, None], std[:, None], (2, 50, size))
    actions = squash(u, low, high).astype(np.float32)

    log_prob = sampled.squashed_gaussian_log_prob(
        jnp.asarray(mean, jnp.float32),
        jnp.asarray(np.log(std), jnp.float32),
        actions,
        low=low,
        high=high,
    )

    assert log_prob.shape == (2, 50)
    expected = reference_log_prob(mean, std, actions, low, high)
    np.testing.assert_allclose(log_prob, expected, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize(("mean", "std"), [(0.4, 0.7), (-1.0, 1.5)])
def test_squashed_gaussian_density_integrates_to_one_over_the_box(mean, std):
    low, high = BOXES["1d_asymmetric"]
    grid = np.linspace(low[0], high[0], 20_001)
    log_prob = sampled.squashed_gaussian_log_prob(
        jnp.array([mean], jnp.float32),
        jnp.array([math.log(std)], jnp.float32),
        grid[:, None].astype(np.float32),
        low=low,
        high=high,
    )
    mass = np.trapezoid(np.exp(np.asarray(log_prob, np.float64)), grid)
    assert mass == pytest.approx(1.0, abs=1e-3)


def test_squashed_gaussian_samples_lie_in_the_box_with_the_gaussian_moments():
    low, high = BOXES["2d"]
    mean, std, num_samples = np.array([0.3, -0.5]), np.array([0.5, 1.0]), 20_000
    actions = sampled.squashed_gaussian_sample(
        jax.random.key(0),
        jnp.asarray(mean, jnp.float32),
        jnp.asarray(np.log(std), jnp.float32),
        low=low,
        high=high,
        num_samples=num_samples,
    )

    assert actions.shape == (num_samples, 2) and actions.dtype == jnp.float32
    a = np.asarray(actions, np.float64)
    assert (a >= low).all() and (a <= high).all()
    u = np.arctanh(np.clip(2.0 * (a - low) / (high - low) - 1.0, -1 + 1e-7, 1 - 1e-7))
    np.testing.assert_array_less(np.abs(u.mean(0) - mean), 5.0 * std / math.sqrt(num_samples))
    np.testing.assert_allclose(u.std(0), std, rtol=0.03)


def test_squashed_gaussian_sample_broadcasts_over_batch_dims():
    actions = sampled.squashed_gaussian_sample(
        jax.random.key(1),
        jnp.zeros((3, 4, 2)),
        jnp.zeros(2),  # a state-independent log_std
        low=-1.0,
        high=np.array([1.0, 2.0]),
        num_samples=5,
    )
    assert actions.shape == (3, 4, 5, 2)


def test_squashed_gaussian_log_prob_is_finite_on_the_bounds():
    low, high = BOXES["1d_asymmetric"]
    actions = np.array([[low[0]], [high[0]]], np.float32)  # [K=2, D=1]
    mean, log_std = jnp.array([0.2]), jnp.array([-0.3])

    def total(mean, log_std):
        return sampled.squashed_gaussian_log_prob(mean, log_std, actions, low=low, high=high).sum()

    log_prob = sampled.squashed_gaussian_log_prob(mean, log_std, actions, low=low, high=high)
    grads = jax.grad(total, argnums=(0, 1))(mean, log_std)

    # At the clip, by the textbook formula: u = ±atanh(1 - 1e-6) (as float32).
    u = np.arctanh(np.float64(np.float32(1.0 - 1e-6))) * np.array([-1.0, 1.0])
    expected = stats.norm.logpdf(u, 0.2, math.exp(-0.3)) - np.log(1.5 * (1.0 - np.tanh(u) ** 2))
    assert np.isfinite(log_prob).all()
    np.testing.assert_allclose(log_prob, expected, rtol=1e-3)
    assert all(np.isfinite(g).all() for g in grads)


# The factored categorical.

# D=2, N=3: probabilities [1/4, 1/2, 1/4] and [1/2, 1/2, 0], the choice [1, 2] padded.
FACTORED_LOGITS = np.array([[0.0, math.log(2.0), 0.0], [0.0, 0.0, -np.inf]], np.float32)


def test_factored_categorical_log_prob_by_hand():
    actions = np.array([[1, 0], [2, 1], [0, 0]], np.int32)  # [K=3, D=2]
    log_prob = sampled.factored_categorical_log_prob(jnp.asarray(FACTORED_LOGITS), actions)
    expected = np.log([0.5 * 0.5, 0.25 * 0.5, 0.25 * 0.5])
    np.testing.assert_allclose(log_prob, expected, rtol=1e-6)


def test_factored_categorical_sample_frequencies_match_softmax():
    num_samples = 20_000
    actions = sampled.factored_categorical_sample(
        jax.random.key(0), jnp.asarray(FACTORED_LOGITS), num_samples=num_samples
    )
    assert actions.shape == (num_samples, 2) and actions.dtype == jnp.int32
    a = np.asarray(actions)
    for d, probabilities in enumerate([[0.25, 0.5, 0.25], [0.5, 0.5, 0.0]]):
        frequency = np.bincount(a[:, d], minlength=3) / num_samples
        within_standard_errors(frequency, np.array(probabilities), num_samples)
    assert not (a[:, 1] == 2).any()  # the padded choice


def test_factored_categorical_broadcasts_over_batch_dims():
    logits = jnp.zeros((4, 2, 3))
    actions = sampled.factored_categorical_sample(jax.random.key(2), logits, num_samples=5)
    assert actions.shape == (4, 5, 2)
    log_prob = sampled.factored_categorical_log_prob(logits, actions)
    np.testing.assert_allclose(log_prob, np.full((4, 5), 2 * math.log(1 / 3)), rtol=1e-6)


# Sampling without replacement.


def draw_without_replacement(logits, num_samples, num_draws, seed=0):
    """``[num_draws, K]``: one compile, ``num_draws`` keys."""
    keys = jax.random.split(jax.random.key(seed), num_draws)
    draw = functools.partial(sampled.sample_without_replacement, num_samples=num_samples)
    return np.asarray(jax.jit(jax.vmap(draw, in_axes=(0, None)))(keys, jnp.asarray(logits)))


def test_sample_without_replacement_of_all_actions_is_arange():
    logits = np.array([0.3, -2.0, 1.5, 0.0, 4.0, -0.7], np.float32)
    draws = draw_without_replacement(logits, num_samples=6, num_draws=16)
    assert draws.dtype == np.int32
    np.testing.assert_array_equal(draws, np.broadcast_to(np.arange(6), (16, 6)))


def test_sample_without_replacement_draws_distinct_sorted_actions():
    logits = np.array([0.3, -2.0, 1.5, 0.0, 4.0, -0.7], np.float32)
    draws = draw_without_replacement(logits, num_samples=3, num_draws=500)
    assert draws.shape == (500, 3)
    assert (np.diff(draws, axis=-1) > 0).all()  # sorted ascending, hence distinct


@pytest.mark.parametrize("num_samples", [1, 2])
def test_sample_without_replacement_inclusion_frequencies(num_samples):
    logits = np.array([0.5, -1.0, 2.0, 0.0, 1.0])
    p = np.exp(logits) / np.exp(logits).sum()
    if num_samples == 1:
        inclusion = p
    else:  # first draw a, or first draw b then a from the rest
        inclusion = np.array(
            [p[a] + sum(p[b] * p[a] / (1 - p[b]) for b in range(5) if b != a) for a in range(5)]
        )
    num_draws = 20_000
    draws = draw_without_replacement(logits.astype(np.float32), num_samples, num_draws)
    frequency = np.bincount(draws.ravel(), minlength=5) / num_draws
    within_standard_errors(frequency, inclusion, num_draws)


def test_sample_without_replacement_never_draws_illegal_actions_while_legal_ones_remain():
    logits = np.array([1.0, -np.inf, 0.0, -np.inf, 2.0, 0.5], np.float32)
    draws = draw_without_replacement(logits, num_samples=4, num_draws=300)
    np.testing.assert_array_equal(draws, np.broadcast_to([0, 2, 4, 5], (300, 4)))
    # Five places, four legal actions: all four, and one distinct illegal action.
    draws = draw_without_replacement(logits, num_samples=5, num_draws=300)
    assert (np.diff(draws, axis=-1) > 0).all()
    for row in draws:
        assert {0, 2, 4, 5} <= set(row.tolist())
        assert len(set(row.tolist()) & {1, 3}) == 1


# The prior correction.


@pytest.mark.parametrize(
    ("ids", "counts"),
    [
        ([3, 1, 3, 3], [3, 1, 3, 3]),
        ([0, 1, 2], [1, 1, 1]),
        ([[0, 0], [1, 2]], [[2, 2], [1, 1]]),
    ],
)
def test_empirical_counts_by_hand(ids, counts):
    result = sampled.empirical_counts(jnp.array(ids))
    assert result.dtype == jnp.int32
    np.testing.assert_array_equal(result, counts)


def test_first_occurrence_by_hand():
    np.testing.assert_array_equal(
        sampled.first_occurrence(jnp.array([[3, 1, 3, 3], [0, 1, 2, 1]])),
        [[True, True, False, False], [True, True, True, False]],
    )


def test_sampled_prior_where_beta_is_pi_is_the_empirical_distribution():
    # Action 3 drawn three times, action 1 once; β = π, whatever π is.
    log_pi = jnp.log(jnp.array([0.2, 0.5, 0.2, 0.2]))
    logits = sampled.sampled_prior_logits(log_pi, log_pi, jnp.array([3, 1, 3, 3]), num_samples=4)
    np.testing.assert_allclose(logits, np.log([0.75, 0.25, 0.75, 0.75]), rtol=1e-6)
    # One child per distinct action: prior 3/4 for action 3 and 1/4 for action 1.
    kept = np.where([True, True, False, False], np.asarray(logits), -np.inf)
    np.testing.assert_allclose(np.exp(kept) / np.exp(kept).sum(), [0.75, 0.25, 0, 0], atol=1e-6)


def test_sampled_prior_where_beta_is_not_pi_by_hand():
    pi, beta = np.array([0.5, 0.2, 0.3]), np.array([0.2, 0.5, 0.3])
    logits = sampled.sampled_prior_logits(
        jnp.log(pi), jnp.log(beta), jnp.array([1, 1, 1]), num_samples=3
    )
    # (1/3) / β · π = [2.5, 0.4, 1] / 3.
    np.testing.assert_allclose(logits, np.log(np.array([2.5, 0.4, 1.0]) / 3), rtol=1e-5)
    prior = np.exp(logits) / np.exp(logits).sum()
    np.testing.assert_allclose(prior, np.array([2.5, 0.4, 1.0]) / 3.9, rtol=1e-5)


def test_sampled_prior_of_impossible_samples_is_minus_infinity_without_nan_gradient():
    log_pi = jnp.log(jnp.array([0.5, 0.5, 0.0, 0.5]))
    log_beta = jnp.log(jnp.array([0.5, 0.5, 0.5, 0.0]))
    counts = jnp.array([1, 0, 1, 1])  # the second is padding

    def prior(log_pi, log_beta):
        return sampled.sampled_prior_logits(log_pi, log_beta, counts, num_samples=4)

    np.testing.assert_allclose(
        prior(log_pi, log_beta), [math.log(1 / 4), -np.inf, -np.inf, -np.inf]
    )
    grads = jax.grad(lambda *x: jax.nn.softmax(prior(*x))[0], argnums=(0, 1))(log_pi, log_beta)
    assert all(np.isfinite(g).all() for g in grads)


# The loss.


def test_sampled_policy_loss_by_hand_and_its_gradients():
    log_prob = jnp.log(jnp.array([0.5, 0.25, 0.25]))
    target = jnp.array([0.2, 0.3, 0.5])
    mask = jnp.array([True, True, False])

    loss = sampled.sampled_policy_loss(log_prob, target)
    masked = sampled.sampled_policy_loss(log_prob, target, mask)
    grad_log_prob, grad_target = jax.grad(sampled.sampled_policy_loss, argnums=(0, 1))(
        log_prob, target, mask
    )

    assert loss == pytest.approx(-(0.2 * math.log(0.5) + 0.8 * math.log(0.25)), rel=1e-6)
    assert masked == pytest.approx(-(0.2 * math.log(0.5) + 0.3 * math.log(0.25)), rel=1e-6)
    np.testing.assert_allclose(grad_log_prob, [-0.2, -0.3, 0.0])
    np.testing.assert_array_equal(grad_target, [0.0, 0.0, 0.0])


def test_sampled_policy_loss_ignores_masked_and_zero_target_impossible_samples():
    log_prob = jnp.array([math.log(0.5), -jnp.inf, -jnp.inf])
    target = jnp.array([1.0, 0.0, 0.5])
    loss = sampled.sampled_policy_loss(log_prob, target, jnp.array([True, True, False]))
    assert loss == pytest.approx(math.log(2), rel=1e-6)


def test_no_gradient_flows_through_sampled_actions():
    def total(mean, log_std):
        actions = sampled.squashed_gaussian_sample(
            jax.random.key(0), mean, log_std, low=-1.0, high=2.0, num_samples=4
        )
        return jnp.sum(actions**2)

    grads = jax.grad(total, argnums=(0, 1))(jnp.array([0.3, -0.2]), jnp.array([0.1, -0.5]))
    for g in grads:
        np.testing.assert_array_equal(g, [0.0, 0.0])


def test_entropy_estimate_value_and_gradient_by_hand():
    log_prob = jnp.log(jnp.array([[0.5, 0.25], [0.1, 0.1]]))
    entropy = sampled.entropy_estimate(log_prob)
    grad = jax.grad(lambda x: sampled.entropy_estimate(x).sum())(log_prob)
    np.testing.assert_allclose(
        entropy, [-(math.log(0.5) + math.log(0.25)) / 2, -math.log(0.1)], rtol=1e-6
    )
    np.testing.assert_allclose(grad, -np.log([[0.5, 0.25], [0.1, 0.1]]) / 2, rtol=1e-6)


def test_entropy_estimate_gradient_is_the_entropy_gradient_on_average():
    theta = np.array([0.3, -0.2, 1.0])

    def entropy(theta):
        p = np.exp(theta) / np.exp(theta).sum()
        return -np.sum(p * np.log(p))

    step = 1e-6
    expected = np.array(
        [(entropy(theta + step * e) - entropy(theta - step * e)) / (2 * step) for e in np.eye(3)]
    )
    num_samples = 20_000
    p = np.exp(theta) / np.exp(theta).sum()
    actions = np.random.default_rng(0).choice(3, size=num_samples, p=p)

    def estimate(theta):
        return sampled.entropy_estimate(jax.nn.log_softmax(theta)[actions])

    grad = jax.grad(estimate)(jnp.asarray(theta, jnp.float32))
    assert estimate(jnp.asarray(theta, jnp.float32)) == pytest.approx(entropy(theta), abs=0.02)
    np.testing.assert_allclose(grad, expected, atol=0.03)


# Every public function, jitted and not.

LOW, HIGH = np.array([-2.0, 0.0]), np.array([1.0, 3.0])
MEAN = jnp.array([[0.1, -0.3], [0.4, 0.2]])
LOG_STD = jnp.array([[-0.5, 0.2], [0.0, -1.0]])
ACTIONS = jnp.array([[[0.5, 1.0], [-1.5, 2.9], [0.9, 0.1]]] * 2)  # [2, K=3, D=2]
CASES = {
    "squashed_gaussian_sample": (
        functools.partial(sampled.squashed_gaussian_sample, low=LOW, high=HIGH, num_samples=3),
        (jax.random.key(3), MEAN, LOG_STD),
    ),
    "squashed_gaussian_log_prob": (
        functools.partial(sampled.squashed_gaussian_log_prob, low=LOW, high=HIGH),
        (MEAN, LOG_STD, ACTIONS),
    ),
    "factored_categorical_sample": (
        functools.partial(sampled.factored_categorical_sample, num_samples=3),
        (jax.random.key(4), jnp.asarray(FACTORED_LOGITS)),
    ),
    "factored_categorical_log_prob": (
        sampled.factored_categorical_log_prob,
        (jnp.asarray(FACTORED_LOGITS), jnp.array([[1, 0], [2, 1]])),
    ),
    "sample_without_replacement": (
        functools.partial(sampled.sample_without_replacement, num_samples=2),
        (jax.random.key(5), jnp.array([[0.1, 2.0, -1.0], [0.0, -jnp.inf, 0.5]])),
    ),
    "empirical_counts": (sampled.empirical_counts, (jnp.array([[3, 1, 3, 3]]),)),
    "first_occurrence": (sampled.first_occurrence, (jnp.array([[3, 1, 3, 3]]),)),
    "sampled_prior_logits": (
        functools.partial(sampled.sampled_prior_logits, num_samples=3),
        (jnp.log(jnp.array([0.5, 0.2, 0.3])), jnp.log(jnp.array([0.2, 0.5, 0.3])), jnp.ones(3)),
    ),
    "sampled_policy_loss": (
        sampled.sampled_policy_loss,
        (
            jnp.log(jnp.array([0.5, 0.25, 0.25])),
            jnp.array([0.2, 0.3, 0.5]),
            jnp.array([1, 1, 0]) > 0,
        ),
    ),
    "entropy_estimate": (sampled.entropy_estimate, (jnp.log(jnp.array([[0.5, 0.25]])),)),
}


@pytest.mark.parametrize("name", CASES)
def test_jitted_and_unjitted_agree(name):
    fn, args = CASES[name]
    np.testing.assert_allclose(jax.jit(fn)(*args), fn(*args), rtol=1e-6)


# Bad input: one line naming the argument, its value and what is allowed.

BAD_INPUTS = {
    "no samples": (
        lambda: sampled.squashed_gaussian_sample(
            jax.random.key(0), MEAN, LOG_STD, low=LOW, high=HIGH, num_samples=0
        ),
        "'num_samples' = 0 is invalid: allowed an integer >= 1",
    ),
    "infinite bound": (
        lambda: sampled.squashed_gaussian_sample(
            jax.random.key(0), MEAN, LOG_STD, low=[-np.inf, 0.0], high=HIGH, num_samples=2
        ),
        r"a Box with infinite bounds cannot be squashed into: low=\[-inf, 0.0\], high=\[1.0, 3.0\]",
    ),
    "low above high": (
        lambda: sampled.squashed_gaussian_log_prob(
            MEAN, LOG_STD, ACTIONS, low=[2.0, 0.0], high=HIGH
        ),
        r"low must be < high in every dimension: low=\[2.0, 0.0\], high=\[1.0, 3.0\]",
    ),
    "check_box with low above high": (
        lambda: sampled.check_box(np.array([0.0, 1.0]), 0.5),
        r"low must be < high in every dimension: low=\[0.0, 1.0\], high=0.5",
    ),
    "bound of the wrong size": (
        lambda: sampled.squashed_gaussian_log_prob(MEAN, LOG_STD, ACTIONS, low=[0, 0, 0], high=1.0),
        r"low has shape \(3,\): allowed a scalar or \[D\] = \(2,\)",
    ),
    "log_std of another shape": (
        lambda: sampled.squashed_gaussian_sample(
            jax.random.key(0), MEAN, jnp.zeros(3), low=LOW, high=HIGH, num_samples=2
        ),
        r"shapes do not broadcast: mean \(2, 2\), log_std \(3,\); allowed mean \[..., D\]",
    ),
    "actions of another size": (
        lambda: sampled.squashed_gaussian_log_prob(
            MEAN, LOG_STD, jnp.zeros((2, 3, 4)), low=LOW, high=HIGH
        ),
        r"shapes do not broadcast: mean_over_K \(2, 1, 2\), actions \(2, 3, 4\)",
    ),
    "actions without K": (
        lambda: sampled.squashed_gaussian_log_prob(
            MEAN[0], LOG_STD[0], ACTIONS[0, 0], low=LOW, high=HIGH
        ),
        r"actions has shape \(2,\): allowed \[..., K, D\]",
    ),
    "factored logits without N": (
        lambda: sampled.factored_categorical_sample(jax.random.key(0), jnp.zeros(3), num_samples=2),
        r"logits has shape \(3,\): allowed \[..., D, N\]",
    ),
    "factored actions of another D": (
        lambda: sampled.factored_categorical_log_prob(
            jnp.asarray(FACTORED_LOGITS), jnp.zeros((4, 3), jnp.int32)
        ),
        r"shapes do not broadcast: logits_over_K \(1, 2\), actions \(4, 3\)",
    ),
    "more samples than actions": (
        lambda: sampled.sample_without_replacement(jax.random.key(0), jnp.zeros(6), num_samples=7),
        r"'num_samples' = 7 is invalid: allowed an integer in \[1, 6\]",
    ),
    "counts of another K": (
        lambda: sampled.sampled_prior_logits(
            jnp.zeros(3), jnp.zeros(3), jnp.ones(3), num_samples=4
        ),
        r"counts has shape \(3,\): allowed \[..., K\] with K = num_samples = 4",
    ),
    "mask of another shape": (
        lambda: sampled.sampled_policy_loss(jnp.zeros(3), jnp.zeros(3), jnp.ones(4, bool)),
        r"shapes do not broadcast: log_prob \(3,\), target \(3,\), mask \(4,\); allowed \[..., K\]",
    ),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
def test_bad_input_raises_one_line(case):
    call, message = BAD_INPUTS[case]
    with pytest.raises(ValueError, match=message) as error:
        call()
    assert "\n" not in str(error.value)
