"""The MuZero training loss over a K-step model unroll (Schrittwieser et al., 2020, Appendix G).

For each example, the representation function encodes the first observation, the dynamics function is
unrolled K steps along the stored actions (a ``jax.lax.scan``, so the program size does not grow with K),
and every step's value, reward and policy predictions are matched to their targets with cross-entropy.
Two gradient scalings follow the pseudocode exactly: the hidden state entering each further dynamics
step has its gradient scaled by ``hidden_grad_scale`` (1/2), and each unrolled step's loss has its
gradient scaled by ``1/K``; both act on the gradient only, not on the loss value.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from mz_jax.core import transforms
from mz_jax.core.batch_checks import check_batch, check_num_actions
from mz_jax.core.ops import scale_gradient
from mz_jax.core.unroll import unroll_model
from mz_jax.types import Array, Batch, ModelOutput, MuZeroNetwork, Params, StochasticMuZeroNetwork


class LossAux(NamedTuple):
    """Per-term losses (batch means, before the 1/K gradient scaling), priorities and target statistics.

    Attributes:
      losses: scalars by term; training logs each as ``loss/<term>`` (:mod:`mz_jax.run.metrics`), so a
        term added here needs no other change to be logged:

        * ``value``: ``mean_b(weight_b * sum_k mask_bk * CE(value_k))``;
        * ``reward``: the same for the reward heads of steps 1..K (with ``reward_mask``); for a
          value-prefix network, the value-prefix heads against prefix targets;
        * ``policy``: the same for the policy heads;
        * ``turn`` (only for a network that predicts turns, ``MuZeroNetwork.turn_logits``): the
          same for the binary cross-entropy of steps 1..K against ``target_same_player`` (with
          ``observation_mask``);
        * ``consistency`` (only with ``consistency_loss_weight > 0``): the same for
          ``-cos(head(proj(ŝ_k)), sg(proj(s_k)))`` over steps 1..K (with ``observation_mask``);
        * ``weight_decay``: ``weight_decay * sum_theta ||theta||^2 / 2``;
        * ``total``: the loss, ``value_loss_weight * value + reward + policy (+ turn)
          + consistency_loss_weight * consistency + weight_decay``.
      priority: ``[B]``, ``|h^-1(value_0) - target_value_0|`` (the new replay priorities).
      clipped: the fraction of the trained (masked-in) ``value`` and ``reward`` targets that lie
        outside their categorical support and were clipped to its ends (logged as
        ``targets/value_clipped`` and ``targets/reward_clipped``).
    """

    losses: dict[str, Array]
    priority: Array
    clipped: dict[str, Array]


LossFn = Callable[[Params, Batch], tuple[Array, LossAux]]


def cross_entropy(logits: Array, target_probs: Array) -> Array:
    """``-sum_i p_i log softmax(logits)_i`` over the last axis, computed in float32."""
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.sum(target_probs * log_probs, axis=-1)


def binary_cross_entropy(logits: Array, targets: Array) -> Array:
    """``-t log sigmoid(x) - (1 - t) log sigmoid(-x)``, elementwise, in float32."""
    x = logits.astype(jnp.float32)
    return targets * jax.nn.softplus(-x) + (1.0 - targets) * jax.nn.softplus(x)


def negative_cosine(prediction: Array, target: Array) -> Array:
    """``-cos(prediction, target)`` over the last axis, in float32 (EfficientZero's consistency
    term; SimSiam's ``D``). A zero vector counts as orthogonal to everything."""
    a, b = prediction.astype(jnp.float32), target.astype(jnp.float32)
    norm = lambda x: jnp.sqrt(jnp.maximum(jnp.sum(x * x, axis=-1, keepdims=True), 1e-24))
    return -jnp.sum((a / norm(a)) * (b / norm(b)), axis=-1)


def value_prefix_matrix(num_unroll_steps: int, horizon: int) -> np.ndarray:
    """``M[K+1, K+1]`` with ``prefix = reward @ M.T``: row k >= 1 sums the rewards of steps
    ``((k-1)//H)*H + 1 .. k`` (since the last reset of the LSTM); row 0 is zeros."""
    steps = np.arange(num_unroll_steps + 1)
    first = (np.maximum(steps - 1, 0) // horizon) * horizon + 1
    matrix = (steps[None, :] >= first[:, None]) & (steps[None, :] <= steps[:, None])
    matrix[0] = False
    return matrix.astype(np.float32)


def _weighted_mean(weight: Array, mask: Array, per_step: Array) -> Array:
    return jnp.mean(weight * jnp.sum(mask * per_step, axis=1))


def loss_from_predictions(
    predictions: ModelOutput,
    batch: Batch,
    *,
    value_loss_weight: float = 1.0,
    reward_loss_weight: float = 1.0,
    value_prefix_horizon: int | None = None,
    consistency: Array | None = None,
    consistency_loss_weight: float = 0.0,
    turn: Array | None = None,
    value_target_sigma: float = 0.0,
) -> tuple[Array, LossAux]:
    """The loss terms of :func:`make_loss_fn` (without weight decay) from ``[B, K+1, ...]`` predictions.

    ``consistency`` is the ``[B, K]`` negative cosine of steps 1..K, or None; ``turn`` the ``[B, K]``
    turn cross-entropies of steps 1..K (:func:`turn_terms`), or None; ``value_target_sigma`` as in
    :func:`make_loss_fn`. ``aux.losses`` has ``total``, ``value``, ``reward``, ``policy`` (and
    ``consistency``, ``turn``)."""
    check_num_actions(predictions.policy_logits, batch.target_policy)
    num_unroll_steps = batch.actions.shape[1]
    value_support = transforms.support_size_from_bins(predictions.value_logits.shape[-1])
    reward_support = transforms.support_size_from_bins(predictions.reward_logits.shape[-1])
    mask = batch.mask.astype(jnp.float32)
    reward_mask = mask if batch.reward_mask is None else batch.reward_mask.astype(jnp.float32)
    # The reward head of step 0 is not trained.
    reward_mask = reward_mask.at[:, 0].set(0.0)
    weight = batch.weight.astype(jnp.float32)

    target_reward = batch.target_reward.astype(jnp.float32)
    if value_prefix_horizon is not None:
        target_reward = (
            target_reward @ value_prefix_matrix(num_unroll_steps, value_prefix_horizon).T
        )
    value_ce = cross_entropy(
        predictions.value_logits,
        transforms.scalar_to_support(batch.target_value, value_support, sigma=value_target_sigma),
    )
    reward_ce = cross_entropy(
        predictions.reward_logits, transforms.scalar_to_support(target_reward, reward_support)
    )
    policy_ce = cross_entropy(predictions.policy_logits, batch.target_policy)

    step_loss = (
        mask * (value_loss_weight * value_ce + policy_ce)
        + reward_loss_weight * reward_mask * reward_ce
    )
    losses = {
        "value": _weighted_mean(weight, mask, value_ce),
        "reward": _weighted_mean(weight, reward_mask, reward_ce),
        "policy": _weighted_mean(weight, mask, policy_ce),
    }
    if turn is not None:
        turn_mask = (
            mask[:, 1:] if batch.observation_mask is None else batch.observation_mask
        ).astype(jnp.float32)
        step_loss = step_loss + jnp.pad(turn_mask * turn, ((0, 0), (1, 0)))
        losses["turn"] = _weighted_mean(weight, turn_mask, turn)
    if consistency is not None:
        observation_mask = (
            mask[:, 1:] if batch.observation_mask is None else batch.observation_mask
        ).astype(jnp.float32)
        observation_mask = jnp.pad(observation_mask, ((0, 0), (1, 0)))
        consistency = jnp.pad(consistency, ((0, 0), (1, 0)))  # step 0 has no consistency term
        step_loss = step_loss + consistency_loss_weight * observation_mask * consistency
        losses["consistency"] = _weighted_mean(weight, observation_mask, consistency)
    # The 1/K acts on the gradient only (pseudocode: scale_gradient(loss, 1/K)).
    step_loss = jnp.concatenate(
        [step_loss[:, :1], scale_gradient(step_loss[:, 1:], 1.0 / num_unroll_steps)], axis=1
    )
    loss = jnp.mean(weight * jnp.sum(step_loss, axis=1))

    def clipped_fraction(targets, support, where):
        hits = transforms.clipped(jax.lax.stop_gradient(targets), support).astype(jnp.float32)
        return jnp.sum(where * hits) / jnp.maximum(jnp.sum(where), 1.0)

    value_0 = transforms.logits_to_scalar(predictions.value_logits[:, 0])
    aux = LossAux(
        losses={"total": loss, **losses},
        priority=jax.lax.stop_gradient(jnp.abs(value_0 - batch.target_value[:, 0])),
        clipped={
            "value_clipped": clipped_fraction(batch.target_value, value_support, mask),
            "reward_clipped": clipped_fraction(target_reward, reward_support, reward_mask),
        },
    )
    return loss, aux


def turn_terms(
    network: MuZeroNetwork | StochasticMuZeroNetwork, params: Params, states: Any, batch: Batch
) -> Array:
    """``[B, K]`` binary cross-entropies of ``network.turn_logits`` of the unrolled states
    ``s_1..s_K`` (stacked ``[K, B, ...]``) against ``batch.target_same_player``."""
    if batch.target_same_player is None:
        raise ValueError(
            "a network that predicts turns (turn_logits) needs batch.target_same_player [B, K] "
            "(mz_jax.make_targets(..., same_player=True))"
        )
    num_steps, batch_size = batch.actions.shape[1], batch.actions.shape[0]
    flat = jax.tree.map(lambda x: x.reshape(num_steps * batch_size, *x.shape[2:]), states)
    logits = network.turn_logits(params, flat).reshape(num_steps, batch_size).T
    return binary_cross_entropy(logits, batch.target_same_player.astype(jnp.float32))


def consistency_terms(
    network: MuZeroNetwork,
    params: Params,
    unrolled_hidden: Any,
    next_observation: Array,
    target_params: Params | None = None,
) -> Array:
    """``[B, K]`` ``-cos(head(proj(ŝ_k)), sg(proj(s_k)))`` for k = 1..K (EfficientZero §4.1).

    ``ŝ_k`` are the unrolled hidden states (``[K, B, ...]``); ``s_k`` is the representation of the
    stored observation ``next_observation[:, k-1]`` (``[B, K, ...]``). The target branch
    (representation and projection of ``s_k``) is encoded with the same, current ``params`` as the
    online branch, or with ``target_params`` when given (SPR's momentum encoder when they are a
    moving average of ``params``), and ``stop_gradient``: no gradient reaches any parameter through
    it, as in EfficientZero and SimSiam. The prediction head acts on the online branch only.
    """
    if network.project is None or network.predict_projection is None:
        raise ValueError(
            "consistency_loss_weight > 0 needs a network with project and predict_projection "
            "(mz_jax.networks: projection_size=...; a network of your own: set both fields of "
            "MuZeroNetwork)"
        )
    num_steps, batch_size = next_observation.shape[1], next_observation.shape[0]
    flat = lambda x: x.reshape(num_steps * batch_size, *x.shape[2:])
    online = network.predict_projection(
        params, network.project(params, jax.tree.map(flat, unrolled_hidden))
    )
    observations = jnp.swapaxes(next_observation, 0, 1)  # [K, B, ...], the order of the unroll
    encoder = params if target_params is None else target_params
    _, target_hidden = network.initial_inference(encoder, flat(observations))
    target = jax.lax.stop_gradient(network.project(encoder, target_hidden))
    return negative_cosine(online, target).reshape(num_steps, batch_size).T


def check_weights(**weights: float) -> None:
    """Raises ``ValueError`` for a loss weight that is not >= 0 (NaN included), naming it."""
    for name, value in weights.items():
        if not value >= 0:
            raise ValueError(f"{name} must be >= 0; got {value}")


def check_sigma(value_target_sigma: float) -> None:
    """Raises ``ValueError`` unless ``value_target_sigma`` is a finite number >= 0."""
    if not (math.isfinite(value_target_sigma) and value_target_sigma >= 0):
        raise ValueError(
            f"value_target_sigma must be a finite number >= 0 (bins); got {value_target_sigma}"
        )


def l2_penalty(params: Params, weight_decay: float) -> Array:
    """``weight_decay * sum_theta ||theta||^2 / 2`` over every leaf of ``params``, in float32."""
    l2 = sum(jnp.sum(jnp.square(p.astype(jnp.float32))) for p in jax.tree.leaves(params))
    return weight_decay * 0.5 * l2


def make_loss_fn(
    network: MuZeroNetwork,
    *,
    value_loss_weight: float = 1.0,
    reward_loss_weight: float = 1.0,
    weight_decay: float = 0.0,
    hidden_grad_scale: float = 0.5,
    consistency_loss_weight: float = 0.0,
    value_target_sigma: float = 0.0,
    remat: bool = False,
    unroll: int | bool = 1,
) -> LossFn:
    """Builds the MuZero loss ``loss_fn(params, batch) -> (loss, LossAux)`` for any ``MuZeroNetwork``.

    With ``(out_0, s_0) = initial_inference(params, observation)`` and, for k = 1..K,
    ``(out_k, s_k) = recurrent_inference(params, h_{k-1}, actions[:, k-1])``, ``h_0 = s_0`` and
    ``h_k = scale_gradient(s_k, hidden_grad_scale)``, the per-step loss is
    ``l_k = mask_k (value_loss_weight CE(value_k, phi(z_k)) + CE(policy_k, pi_k))
    + [k >= 1] reward_loss_weight reward_mask_k CE(reward_k, phi(u_k))``
    and the loss is
    ``mean_b(weight_b * sum_k scale_gradient(l_bk, c_k)) + weight_decay * sum ||theta||^2 / 2``
    with ``c_0 = 1`` and ``c_k = 1/K``. phi is :func:`mz_jax.core.transforms.scalar_to_support`; the support
    sizes are read off the value and reward logits' last axes. With the defaults this is exactly the
    MuZero loss; the EfficientZero terms are opt-in:

    * ``consistency_loss_weight`` c > 0 adds ``c * observation_mask_k * (-cos(head(proj(ŝ_k)),
      sg(proj(s_k))))`` to ``l_k`` for k >= 1 (see :func:`consistency_terms`); the batch must carry
      ``next_observation``. ``loss_fn(params, batch, target_params)`` encodes ``s_k`` with
      ``target_params`` instead of ``params`` (no other term reads them).
    * a value-prefix network (``network.value_prefix_horizon`` H) has its reward heads trained on
      value prefixes ``sum of u_i`` since the last reset (every H steps; see
      :func:`value_prefix_matrix`) instead of per-step rewards, and its LSTM carry reset in the unroll.
    * a network that predicts turns (``network.turn_logits``) adds to ``l_k``, k >= 1, the binary
      cross-entropy of its turn logit of ``s_k`` against ``target_same_player`` (with
      ``observation_mask``); the batch must carry ``target_same_player`` (:func:`turn_terms`).
    * ``value_target_sigma`` > 0 spreads each value target ``phi(z_k)`` over the support by a
      normal of that many bins (HL-Gauss, Farebrother et al. 2024) instead of two-hot.

    Args:
      network: the representation/dynamics/prediction functions.
      value_loss_weight: weight of the value term (the MuZero Reanalyse appendix uses 0.25).
      reward_loss_weight: weight of the reward term (1 in MuZero; EfficientZero and LightZero expose
        it too). Games scored once, at their end, train it on one transition in tens.
      weight_decay: L2 coefficient on all parameters, in the loss (for decoupled weight decay, give
        it to :func:`mz_jax.make_optimizer` instead).
      hidden_grad_scale: gradient scale of the hidden state between unrolled steps (1/2 in the paper).
      consistency_loss_weight: weight of EfficientZero's self-supervised consistency term (2 in the
        paper); 0 leaves it out.
      value_target_sigma: the standard deviation, in bins of the value support, of HL-Gauss value
        targets (:func:`mz_jax.core.transforms.scalar_to_gaussian`; 0.75 in the paper); 0: two-hot, as
        MuZero. The reward targets stay two-hot.
      remat: rematerialise each unrolled step in the backward pass (``jax.checkpoint``), trading compute
        for memory on long unrolls.
      unroll: passed to ``jax.lax.scan``; unrolling a few steps can help small models on accelerators.

    Returns:
      A pure function, jit-, grad- and vmap-able.
    """
    check_weights(
        value_loss_weight=value_loss_weight,
        reward_loss_weight=reward_loss_weight,
        weight_decay=weight_decay,
        consistency_loss_weight=consistency_loss_weight,
    )
    check_sigma(value_target_sigma)

    def loss_fn(
        params: Params, batch: Batch, target_params: Params | None = None
    ) -> tuple[Array, LossAux]:
        check_batch(batch)
        unrolled = unroll_model(
            network,
            params,
            batch.observation,
            batch.actions,
            hidden_grad_scale=hidden_grad_scale,
            remat=remat,
            unroll=unroll,
        )
        consistency, turn = _optional_terms(
            network, params, unrolled.hidden, batch, target_params, consistency_loss_weight
        )
        loss, aux = loss_from_predictions(
            unrolled.predictions,
            batch,
            value_loss_weight=value_loss_weight,
            reward_loss_weight=reward_loss_weight,
            value_prefix_horizon=network.value_prefix_horizon,
            consistency=consistency,
            consistency_loss_weight=consistency_loss_weight,
            turn=turn,
            value_target_sigma=value_target_sigma,
        )
        weight_decay_loss = l2_penalty(params, weight_decay)
        total = loss + weight_decay_loss
        losses = {**aux.losses, "weight_decay": weight_decay_loss, "total": total}
        return total, aux._replace(losses=losses)

    return loss_fn


def _optional_terms(
    network: MuZeroNetwork,
    params: Params,
    hidden: Array,
    batch: Batch,
    target_params: Params | None,
    consistency_loss_weight: float,
) -> tuple[Array | None, Array | None]:
    """``(consistency, turn)``: the ``[B, K]`` terms of :func:`consistency_terms` where
    ``consistency_loss_weight`` > 0 and of :func:`turn_terms` where the network predicts turns,
    each None otherwise; ``hidden`` holds the unrolled ``s_1..s_K`` as ``[K, B, ...]``.

    Raises:
      ValueError: the consistency term without ``batch.next_observation``.
    """
    consistency = None
    if consistency_loss_weight > 0:
        if batch.next_observation is None:
            raise ValueError(
                "consistency_loss_weight > 0 needs batch.next_observation [B, K, ...] (the "
                "observations of steps 1..K; mz_jax.make_targets(..., next_observation=True))"
            )
        consistency = consistency_terms(
            network, params, hidden, batch.next_observation, target_params
        )
    turn = None
    if network.turn_logits is not None:
        turn = turn_terms(network, params, hidden, batch)
    return consistency, turn
