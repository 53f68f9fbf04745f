"""The MuZero training loss over a K-step model unroll (Schrittwieser et al., 2020, Appendix G).

For each example, the representation function encodes the first observation, the dynamics function is
unrolled K steps along the stored actions (a ``jax.lax.scan``, so the program size does not grow with K),
and every step's value, reward and policy predictions are matched to their targets with cross-entropy.
Two gradient scalings follow the pseudocode exactly: the hidden state entering each further dynamics
step has its gradient scaled by ``hidden_grad_scale`` (1/2), and each unrolled step's loss has its
gradient scaled by ``1/K``; both act on the gradient only, not on the loss value.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from mz_jax import transforms
from mz_jax.ops import scale_gradient
from mz_jax.types import Array, Batch, ModelOutput, MuZeroNetwork, Params


class LossAux(NamedTuple):
    """Per-term losses (batch means, before the 1/K gradient scaling) and per-example priorities.

    Attributes:
      losses: scalars by term; training logs each as ``loss/<term>`` (:mod:`mz_jax.metrics`), so a
        term added here needs no other change to be logged:

        * ``value``: ``mean_b(weight_b * sum_k mask_bk * CE(value_k))``;
        * ``reward``: the same for the reward heads of steps 1..K;
        * ``policy``: the same for the policy heads;
        * ``weight_decay``: ``weight_decay * sum_theta ||theta||^2 / 2``;
        * ``total``: the loss, ``value_loss_weight * value + reward + policy + weight_decay``.
      priority: ``[B]``, ``|h^-1(value_0) - target_value_0|`` (the new replay priorities).
    """

    losses: dict[str, Array]
    priority: Array


LossFn = Callable[[Params, Batch], tuple[Array, LossAux]]


def cross_entropy(logits: Array, target_probs: Array) -> Array:
    """``-sum_i p_i log softmax(logits)_i`` over the last axis, computed in float32."""
    log_probs = jax.nn.log_softmax(logits.astype(jnp.float32), axis=-1)
    return -jnp.sum(target_probs * log_probs, axis=-1)


def _check_batch(batch: Batch) -> None:
    """Shape checks at trace time, so a wrong batch fails with a message instead of a broadcast."""
    if batch.actions.ndim != 2:
        raise ValueError(f"batch.actions must be [B, K] int32; got shape {batch.actions.shape}")
    b, k = batch.actions.shape
    if k < 1:
        raise ValueError(f"the unroll length K = batch.actions.shape[1] must be >= 1; got {k}")
    if not jnp.issubdtype(batch.actions.dtype, jnp.integer):
        raise ValueError(f"batch.actions must be an integer array; got dtype {batch.actions.dtype}")
    expected = {
        "target_value": ("[B, K+1]", (b, k + 1)),
        "target_reward": ("[B, K+1]", (b, k + 1)),
        "mask": ("[B, K+1]", (b, k + 1)),
        "weight": ("[B]", (b,)),
    }
    for name, (spec, shape) in expected.items():
        got = getattr(batch, name).shape
        if got != shape:
            raise ValueError(f"batch.{name} must have shape {spec} = {shape}; got {got}")
    if batch.target_policy.ndim != 3 or batch.target_policy.shape[:2] != (b, k + 1):
        raise ValueError(
            f"batch.target_policy must have shape [B, K+1, A] = ({b}, {k + 1}, A); "
            f"got {batch.target_policy.shape}"
        )
    if batch.observation.shape[:1] != (b,):
        raise ValueError(
            f"batch.observation must have leading batch axis {b}; got shape {batch.observation.shape}"
        )


def unroll_model(
    network: MuZeroNetwork,
    params: Params,
    observation: Array,
    actions: Array,
    *,
    hidden_grad_scale: float = 0.5,
    remat: bool = False,
    unroll: int | bool = 1,
) -> ModelOutput:
    """Runs the model K steps along ``actions[B, K]`` as one ``jax.lax.scan``.

    ``h_0 = s_0`` and ``h_k = scale_gradient(s_k, hidden_grad_scale)`` for k >= 1, where the pseudocode
    puts it. Returns the predictions of steps 0..K stacked as ``[B, K+1, ...]`` (the step-0 reward
    logits are the initial inference's, which are never trained).
    """

    def body(hidden, action):
        output, next_hidden = network.recurrent_inference(params, hidden, action)
        return scale_gradient(next_hidden, hidden_grad_scale), output

    if remat:
        body = jax.checkpoint(body)
    output_0, hidden_0 = network.initial_inference(params, observation)
    _, outputs = jax.lax.scan(body, hidden_0, actions.T, unroll=unroll)  # leaves [K, B, ...]
    return jax.tree.map(
        lambda first, rest: jnp.concatenate([first[:, None], jnp.swapaxes(rest, 0, 1)], axis=1),
        output_0,
        outputs,
    )


def loss_from_predictions(
    predictions: ModelOutput,
    batch: Batch,
    *,
    value_loss_weight: float = 1.0,
) -> tuple[Array, LossAux]:
    """The loss terms of :func:`make_loss_fn` (without weight decay) from ``[B, K+1, ...]`` predictions.

    ``aux.losses`` has ``total``, ``value``, ``reward`` and ``policy``."""
    num_unroll_steps = batch.actions.shape[1]
    value_support = transforms.support_size_from_bins(predictions.value_logits.shape[-1])
    reward_support = transforms.support_size_from_bins(predictions.reward_logits.shape[-1])
    value_ce = cross_entropy(
        predictions.value_logits, transforms.scalar_to_support(batch.target_value, value_support)
    )
    reward_ce = cross_entropy(
        predictions.reward_logits,
        transforms.scalar_to_support(batch.target_reward, reward_support),
    )
    # The reward head of step 0 is not trained.
    reward_ce = reward_ce.at[:, 0].set(0.0)
    policy_ce = cross_entropy(predictions.policy_logits, batch.target_policy)

    step_loss = value_loss_weight * value_ce + reward_ce + policy_ce  # [B, K+1]
    # The 1/K acts on the gradient only (pseudocode: scale_gradient(loss, 1/K)).
    step_loss = jnp.concatenate(
        [step_loss[:, :1], scale_gradient(step_loss[:, 1:], 1.0 / num_unroll_steps)], axis=1
    )
    mask = batch.mask.astype(jnp.float32)
    weight = batch.weight.astype(jnp.float32)

    def weighted_mean(per_step):
        return jnp.mean(weight * jnp.sum(mask * per_step, axis=1))

    value_0 = transforms.logits_to_scalar(predictions.value_logits[:, 0])
    loss = weighted_mean(step_loss)
    aux = LossAux(
        losses={
            "total": loss,
            "value": weighted_mean(value_ce),
            "reward": weighted_mean(reward_ce),
            "policy": weighted_mean(policy_ce),
        },
        priority=jax.lax.stop_gradient(jnp.abs(value_0 - batch.target_value[:, 0])),
    )
    return loss, aux


def make_loss_fn(
    network: MuZeroNetwork,
    *,
    value_loss_weight: float = 1.0,
    weight_decay: float = 0.0,
    hidden_grad_scale: float = 0.5,
    remat: bool = False,
    unroll: int | bool = 1,
) -> LossFn:
    """Builds the MuZero loss ``loss_fn(params, batch) -> (loss, LossAux)`` for any ``MuZeroNetwork``.

    With ``(out_0, s_0) = initial_inference(params, observation)`` and, for k = 1..K,
    ``(out_k, s_k) = recurrent_inference(params, h_{k-1}, actions[:, k-1])``, ``h_0 = s_0`` and
    ``h_k = scale_gradient(s_k, hidden_grad_scale)``, the per-step loss is
    ``l_k = value_loss_weight * CE(value_k, phi(z_k)) + [k >= 1] CE(reward_k, phi(u_k)) + CE(policy_k, pi_k)``
    and the loss is
    ``mean_b(weight_b * sum_k mask_bk * scale_gradient(l_bk, c_k)) + weight_decay * sum ||theta||^2 / 2``
    with ``c_0 = 1`` and ``c_k = 1/K``. phi is :func:`mz_jax.transforms.scalar_to_support`; the support
    sizes are read off the value and reward logits' last axes.

    Args:
      network: the representation/dynamics/prediction functions.
      value_loss_weight: weight of the value term (the MuZero Reanalyse appendix uses 0.25).
      weight_decay: L2 coefficient on all parameters.
      hidden_grad_scale: gradient scale of the hidden state between unrolled steps (1/2 in the paper).
      remat: rematerialise each unrolled step in the backward pass (``jax.checkpoint``), trading compute
        for memory on long unrolls.
      unroll: passed to ``jax.lax.scan``; unrolling a few steps can help small models on accelerators.

    Returns:
      A pure function, jit-, grad- and vmap-able.
    """
    if value_loss_weight < 0:
        raise ValueError(f"value_loss_weight must be >= 0; got {value_loss_weight}")
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0; got {weight_decay}")

    def loss_fn(params: Params, batch: Batch) -> tuple[Array, LossAux]:
        _check_batch(batch)
        predictions = unroll_model(
            network,
            params,
            batch.observation,
            batch.actions,
            hidden_grad_scale=hidden_grad_scale,
            remat=remat,
            unroll=unroll,
        )
        loss, aux = loss_from_predictions(predictions, batch, value_loss_weight=value_loss_weight)
        l2 = sum(jnp.sum(jnp.square(p.astype(jnp.float32))) for p in jax.tree.leaves(params))
        weight_decay_loss = weight_decay * 0.5 * l2
        total = loss + weight_decay_loss
        losses = {**aux.losses, "weight_decay": weight_decay_loss, "total": total}
        return total, aux._replace(losses=losses)

    return loss_fn
