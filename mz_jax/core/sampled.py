"""The maths of Sampled MuZero (Hubert et al., 2021, "Learning and Planning in Complex Action
Spaces", ICML): proposals, the sampled prior and the policy loss over K sampled actions.

In an action space too large to enumerate (a Box of continuous actions, a product of discrete
choices), the search of each node expands only K actions ``a_1..a_K`` drawn from a proposal β, and
its prior over them is the sample-based policy of the paper's §4::

    prior(a_k) ∝ (β̂(a_k) / β(a_k)) · π(a_k),    β̂(a) = (1/K) Σ_j [a_j = a],

with β̂ the empirical distribution of the sample. The policy is trained on the same actions:
``L = -Σ_k target_k · log π_θ(a_k)``, with the targets (the search's visit distribution over the K
children) and the actions themselves carrying no gradient.

Proposals here: a diagonal Gaussian squashed into a Box by tanh (Haarnoja et al., 2018, "Soft
Actor-Critic", Appendix C), a factored categorical over several discrete dimensions, and sampling
without replacement from one categorical by Gumbel-top-k (Kool et al., 2019, "Stochastic Beams and
Where to Find Them", ICML). Every sample function returns ``jax.lax.stop_gradient`` of its actions.

Each function is written for arbitrary leading batch dims ``...``; shapes are checked at trace time
and bad static arguments raise a one-line ``ValueError``.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.core.validation import fail, integer
from mz_jax.types import Array

ATANH_CLIP = 1.0 - 1e-6
"""The bound of atanh's argument in :func:`squashed_gaussian_log_prob`: an action on a bound of
the Box then has ``|u| = atanh(1 - 1e-6) ≈ 7.25`` and a finite density."""


def _check_num_samples(num_samples: int, *, maximum: int | None = None) -> None:
    rule = integer(1, maximum)
    if not rule.accepts(num_samples):
        fail("num_samples", num_samples, rule.allowed, kind="argument")


def _check_rank(name: str, x: Array, rank: int, layout: str) -> None:
    if jnp.ndim(x) < rank:
        raise ValueError(f"{name} has shape {jnp.shape(x)}: allowed {layout}, at least rank {rank}")


def _broadcast(layout: str, **shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The broadcast of ``shapes``, or a one-line ``ValueError`` naming them and ``layout``."""
    try:
        return jnp.broadcast_shapes(*shapes.values())
    except ValueError:
        named = ", ".join(f"{name} {shape}" for name, shape in shapes.items())
        raise ValueError(f"shapes do not broadcast: {named}; allowed {layout}") from None


def check_box(low: Array | float, high: Array | float) -> None:
    """Raises a one-line ``ValueError`` unless ``[low, high]`` is a Box a tanh can squash into:
    static (Python, numpy or concrete) bounds, finite, ``low < high`` in every dimension."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    if not (np.isfinite(low).all() and np.isfinite(high).all()):
        raise ValueError(
            f"a Box with infinite bounds cannot be squashed into: low={low.tolist()}, "
            f"high={high.tolist()}; allowed finite bounds, low < high"
        )
    if not (low < high).all():
        raise ValueError(
            f"low must be < high in every dimension: low={low.tolist()}, high={high.tolist()}"
        )


def _box(low: Array, high: Array, action_size: int) -> tuple[np.ndarray, np.ndarray]:
    """The bounds of a Box as two float32 ``[D]`` arrays (checked by :func:`check_box`)."""
    bounds = {"low": np.asarray(low, np.float64), "high": np.asarray(high, np.float64)}
    for name, bound in bounds.items():
        if bound.ndim > 1 or (bound.ndim == 1 and bound.shape[0] != action_size):
            raise ValueError(
                f"{name} has shape {bound.shape}: allowed a scalar or [D] = ({action_size},), "
                "the last axis of the mean"
            )
    low, high = (np.broadcast_to(bound, (action_size,)) for bound in bounds.values())
    check_box(low, high)
    return low.astype(np.float32), high.astype(np.float32)


def squashed_gaussian_sample(
    key: Array,
    mean: Array,
    log_std: Array,
    *,
    low: Array | float,
    high: Array | float,
    num_samples: int,
) -> Array:
    """K actions from a diagonal Gaussian squashed into the Box ``[low, high]`` by tanh.

    ``u = mean + exp(log_std) · ε`` with ``ε ~ N(0, I)``, ``a = low + (tanh(u) + 1) / 2 · (high -
    low)``.

    Args:
      key: a PRNG key.
      mean: ``[..., D]``, the Gaussian's mean in the unsquashed space.
      log_std: ``[..., D]`` (or any shape broadcasting to ``mean``'s), its log standard deviation.
      low: ``[D]`` or a scalar, static (Python or numpy), finite, ``low < high``.
      high: ``[D]`` or a scalar, likewise.
      num_samples: K >= 1.

    Returns:
      ``[..., K, D]`` float32 actions in ``[low, high]``, under ``stop_gradient``. (Where ``|u|``
      passes about 9, ``tanh(u)`` rounds to ±1 in float32 and the action lies on the bound.)
    """
    _check_num_samples(num_samples)
    _check_rank("mean", mean, 1, "[..., D]")
    shape = _broadcast(
        "mean [..., D], log_std [..., D]", mean=jnp.shape(mean), log_std=jnp.shape(log_std)
    )
    low, high = _box(low, high, shape[-1])
    noise = jax.random.normal(key, (*shape[:-1], num_samples, shape[-1]), jnp.float32)
    u = jnp.expand_dims(mean, -2) + jnp.exp(jnp.expand_dims(log_std, -2)) * noise
    actions = low + (jnp.tanh(u) + 1.0) / 2.0 * (high - low)
    return jax.lax.stop_gradient(actions)


def squashed_gaussian_log_prob(
    mean: Array, log_std: Array, actions: Array, *, low: Array | float, high: Array | float
) -> Array:
    """The log-density of actions under the squashed Gaussian of :func:`squashed_gaussian_sample`.

    By the change of variables ``a = low + (tanh(u) + 1) / 2 · (high - low)``::

        log p(a) = Σ_d [log N(u_d; mean_d, std_d) - log((high_d - low_d) / 2 · (1 - tanh(u_d)²))],

    with ``u = atanh(2 (a - low) / (high - low) - 1)``, atanh's argument clipped to
    ``±(1 - 1e-6)`` so that actions on the bounds keep a finite density (:data:`ATANH_CLIP`), and
    ``log(1 - tanh(u)²) = 2 (log 2 - u - softplus(-2u))``, stable for large ``|u|``. An action
    whose ``|u|`` exceeds ``atanh(1 - 1e-6) ≈ 7.25`` is scored at the clip.

    Args:
      mean: ``[..., D]``.
      log_std: ``[..., D]`` (or broadcasting to ``mean``'s shape).
      actions: ``[..., K, D]`` in ``[low, high]``; ``mean`` and ``log_std`` broadcast over K.
      low: ``[D]`` or a scalar, static, finite, ``low < high``.
      high: ``[D]`` or a scalar, likewise.

    Returns:
      ``[..., K]`` float32 log-densities (with respect to Lebesgue measure on the Box),
      differentiable in ``mean`` and ``log_std``.
    """
    _check_rank("mean", mean, 1, "[..., D]")
    _check_rank("actions", actions, 2, "[..., K, D]")
    shape = _broadcast(
        "mean [..., D], log_std [..., D]", mean=jnp.shape(mean), log_std=jnp.shape(log_std)
    )
    _broadcast(
        "mean [..., D], actions [..., K, D]",
        mean_over_K=(*shape[:-1], 1, shape[-1]),
        actions=jnp.shape(actions),
    )
    low, high = _box(low, high, shape[-1])
    half_range = (high - low) / 2.0
    y = jnp.clip((actions - low) / half_range - 1.0, -ATANH_CLIP, ATANH_CLIP)
    u = jnp.arctanh(y)
    mean = jnp.expand_dims(mean, -2)
    log_std = jnp.expand_dims(log_std, -2)
    z = (u - mean) * jnp.exp(-log_std)
    log_normal = -0.5 * jnp.square(z) - log_std - 0.5 * math.log(2.0 * math.pi)
    log_jacobian = jnp.log(half_range) + 2.0 * (math.log(2.0) - u - jax.nn.softplus(-2.0 * u))
    return jnp.sum(log_normal - log_jacobian, axis=-1)


def factored_categorical_sample(key: Array, logits: Array, *, num_samples: int) -> Array:
    """K multi-discrete actions: D independent categoricals of N choices each.

    Args:
      key: a PRNG key.
      logits: ``[..., D, N]``; a dimension with fewer than N choices pads with ``-inf``, which is
        never drawn (each dimension needs one finite logit).
      num_samples: K >= 1, drawn with replacement.

    Returns:
      ``[..., K, D]`` int32 actions in ``[0, N)``, under ``stop_gradient``.
    """
    _check_num_samples(num_samples)
    _check_rank("logits", logits, 2, "[..., D, N]")
    shape = jnp.shape(logits)
    actions = jax.random.categorical(
        key, jnp.expand_dims(logits, -3), axis=-1, shape=(*shape[:-2], num_samples, shape[-2])
    )
    return jax.lax.stop_gradient(actions.astype(jnp.int32))


def factored_categorical_log_prob(logits: Array, actions: Array) -> Array:
    """``Σ_d log softmax(logits_d)[a_d]``: the log-probability of multi-discrete actions.

    Args:
      logits: ``[..., D, N]``, broadcast over K.
      actions: ``[..., K, D]`` ints in ``[0, N)``.

    Returns:
      ``[..., K]`` float32 log-probabilities (``-inf`` for a padded choice), differentiable in
      ``logits``.
    """
    _check_rank("logits", logits, 2, "[..., D, N]")
    _check_rank("actions", actions, 2, "[..., K, D]")
    shape = jnp.shape(logits)
    _broadcast(
        "logits [..., D, N], actions [..., K, D]",
        logits_over_K=(*shape[:-2], 1, shape[-2]),
        actions=jnp.shape(actions),
    )
    log_p = jax.nn.log_softmax(jnp.asarray(logits, jnp.float32), axis=-1)
    chosen = jnp.take_along_axis(jnp.expand_dims(log_p, -3), actions[..., None], axis=-1)
    return jnp.sum(chosen[..., 0], axis=-1)


def sample_without_replacement(key: Array, logits: Array, *, num_samples: int) -> Array:
    """K distinct actions of one categorical, by Gumbel-top-k (Kool et al., 2019, §2).

    The K largest of ``logits + g``, ``g ~ Gumbel(0, 1)`` i.i.d., are a sample without replacement
    from ``softmax(logits)`` (for K = 1, the Gumbel-max trick: action a with probability
    ``softmax(logits)[a]``). An illegal action (logit ``-inf``) is never drawn while K legal ones
    remain; with fewer than K legal actions all of them are drawn and the remaining places are filled
    with distinct illegal actions, which the caller recognises by their ``-inf`` logit.

    Args:
      key: a PRNG key.
      logits: ``[..., A]``.
      num_samples: K in ``[1, A]``.

    Returns:
      ``[..., K]`` int32 distinct actions sorted by index, ascending (so K = A gives
      ``arange(A)``), under ``stop_gradient``.
    """
    _check_rank("logits", logits, 1, "[..., A]")
    _check_num_samples(num_samples, maximum=jnp.shape(logits)[-1])
    perturbed = logits + jax.random.gumbel(key, jnp.shape(logits), jnp.float32)
    _, indices = jax.lax.top_k(perturbed, num_samples)
    return jax.lax.stop_gradient(jnp.sort(indices, axis=-1).astype(jnp.int32))


def empirical_counts(sample_ids: Array) -> Array:
    """For each of K samples, how many of the K samples have its id: ``K · β̂(a_k)``.

    Args:
      sample_ids: ``[..., K]`` ids of the samples, compared for equality (a discrete action, an
        index of a multi-discrete action; continuous samples are all distinct: ``arange(K)``).

    Returns:
      ``[..., K]`` int32 counts in ``[1, K]``.
    """
    _check_rank("sample_ids", sample_ids, 1, "[..., K]")
    same = sample_ids[..., :, None] == sample_ids[..., None, :]
    return jnp.sum(same, axis=-1, dtype=jnp.int32)


def first_occurrence(sample_ids: Array) -> Array:
    """Whether each of K samples is the first with its id: one child per distinct action.

    Args:
      sample_ids: ``[..., K]``, as :func:`empirical_counts`'s.

    Returns:
      ``[..., K]`` bool, True for sample k when no sample j < k has its id.
    """
    _check_rank("sample_ids", sample_ids, 1, "[..., K]")
    num_samples = jnp.shape(sample_ids)[-1]
    same = sample_ids[..., :, None] == sample_ids[..., None, :]
    earlier = jnp.tril(jnp.ones((num_samples, num_samples), bool), k=-1)
    return ~jnp.any(same & earlier, axis=-1)


def sampled_prior_logits(
    log_pi: Array, log_beta: Array, counts: Array, *, num_samples: int
) -> Array:
    """The search prior over K sampled actions: ``log((counts / K) / β · π)`` (paper, §4).

    ``log(β̂(a_k) / β(a_k) · π(a_k)) = log(counts_k / K) - log_beta_k + log_pi_k``; its softmax over
    the distinct sampled actions is the prior the paper's search uses. Where β = π (interior nodes,
    sampled from the policy itself with no temperature or noise) it is ``log(counts_k / K)``: the
    empirical distribution. The logits are per distinct action: an action drawn n times has count
    n in each of its n copies, so the search keeps one child per distinct action
    (:func:`first_occurrence`) or the action's weight becomes n². With sampling without
    replacement of all A actions (:func:`sample_without_replacement`, K = A) β̂/β is not defined
    (the paper's §4 samples with replacement): the caller uses ``log_pi`` directly.

    A sample with count 0 (padding), ``log_pi = -inf`` or ``log_beta = -inf`` (an action the
    proposal cannot draw) gets ``-inf``. The constant ``-log K`` does not change the softmax.

    Args:
      log_pi: ``[..., K]``, the policy's log-probability (or log-density) of each sample.
      log_beta: ``[..., K]``, the proposal's, in the same measure.
      counts: ``[..., K]``, :func:`empirical_counts` of the samples.
      num_samples: K, the last axis of ``counts``.

    Returns:
      ``[..., K]`` float32 prior logits.
    """
    _check_num_samples(num_samples)
    _check_rank("counts", counts, 1, "[..., K]")
    if jnp.shape(counts)[-1] != num_samples:
        raise ValueError(
            f"counts has shape {jnp.shape(counts)}: allowed [..., K] with K = num_samples = "
            f"{num_samples}"
        )
    _broadcast(
        "[..., K] each",
        log_pi=jnp.shape(log_pi),
        log_beta=jnp.shape(log_beta),
        counts=jnp.shape(counts),
    )
    counts = jnp.asarray(counts, jnp.float32)
    valid = (counts > 0) & (log_pi > -jnp.inf) & (log_beta > -jnp.inf)
    # The double where keeps NaN out of the gradient of the discarded branch.
    safe = lambda x, fill: jnp.where(valid, x, fill)
    logits = jnp.log(safe(counts, 1.0) / num_samples) - safe(log_beta, 0.0) + safe(log_pi, 0.0)
    return jnp.where(valid, logits, -jnp.inf)


def sampled_policy_loss(log_prob: Array, target: Array, mask: Array | None = None) -> Array:
    """The policy loss over K sampled actions: ``-Σ_k sg(target_k) · log_prob_k`` (paper, §4).

    The actions enter only through ``log_prob``, which the caller computes from actions under
    ``stop_gradient`` (as the sample functions here return them): only the policy's density at the
    fixed samples is trained. A term with ``target_k = 0`` counts 0 (``0 · log 0 = 0``).

    Args:
      log_prob: ``[..., K]``, ``log π_θ(a_k)``.
      target: ``[..., K]``, the search's distribution over the K sampled children (e.g. normalised
        visit counts); no gradient flows into it.
      mask: ``[..., K]`` bool, or None for all True; False excludes a sample (padding, a duplicate).

    Returns:
      ``[...]`` float32 losses.
    """
    _check_rank("log_prob", log_prob, 1, "[..., K]")
    shapes = {"log_prob": jnp.shape(log_prob), "target": jnp.shape(target)}
    if mask is not None:
        shapes["mask"] = jnp.shape(mask)
    _broadcast("[..., K] each", **shapes)
    target = jax.lax.stop_gradient(target)
    keep = target != 0 if mask is None else mask & (target != 0)
    return -jnp.sum(jnp.where(keep, target * log_prob, 0.0), axis=-1)


def entropy_estimate(log_prob: Array) -> Array:
    """``-mean_k log_prob_k``: the Monte-Carlo entropy of a policy over K of its own samples.

    The value estimates ``H(π) = -E_{a~π}[log π(a)]``. Its gradient is the score-function estimate
    of ``∇H = -E[log π(a) ∇log π(a)]`` (``-(1/K) Σ_k sg(log_prob_k) ∇log_prob_k``), not the
    gradient of ``-mean_k log_prob_k`` itself, whose expectation over samples under
    ``stop_gradient`` is ``-E[∇log π(a)] = 0``. Unbiased only where the samples are drawn from π
    itself, with replacement.

    Args:
      log_prob: ``[..., K]`` finite, ``log π_θ(a_k)`` with ``a_k ~ π_θ`` under ``stop_gradient``.

    Returns:
      ``[...]`` float32 entropy estimates (nats), to add as a bonus.
    """
    _check_rank("log_prob", log_prob, 1, "[..., K]")
    fixed = jax.lax.stop_gradient(log_prob)
    return -jnp.mean(fixed + fixed * (log_prob - fixed), axis=-1)
