"""The Stochastic MuZero loss over a K-step unroll with chance outcomes (Antonoglou et al., 2022).

MuZero's dynamics function is deterministic, so in a game with dice it learns the average of the
positions a move can lead to and plans as if chance were its own choice. Stochastic MuZero splits
each transition ``s --a, c--> s'`` in two: the afterstate dynamics ``φ(s, a) = as`` (the position
after the move, before chance), whose prediction ``ψ(as) = (Q, σ)`` gives the afterstate value and
the distribution σ over C chance outcomes, and the chance dynamics ``g(as, c) = (s', r)``. In
training the outcome ``c`` of each stored transition is a one-hot code given by an encoder of the
observations (a VQ-VAE with a fixed codebook of C one-hot vectors), or, where the environment names
its outcomes, their one-hots (``chance_outcome``); in the search it is one of the C
codes, weighted by σ (the chance nodes of :func:`mz_jax.mcts.policies.search`, and
:mod:`mz_jax.mcts.chance_gumbel` for the Gumbel policy).

The loss (the paper's Appendix, "Loss"): the MuZero terms of :func:`mz_jax.make_loss_fn` on the
unrolled states, plus for each unrolled step k = 0..K-1

* ``Q``: ``CE(Q_k, φ(z_k))``, the afterstate value against the value target of the state it follows
  (``z_k`` is the n-step return after the action actually taken, so it estimates ``Q(s_k, a_k)``);
* ``chance``: ``CE(σ_k, sg(c_{k+1}))``, σ against the encoder's code of the observed outcome;
* ``commitment``: ``||sg(c_{k+1}) - c^e_{k+1}||^2``, which keeps the encoder's soft output near its
  code.

The hidden state entering each afterstate dynamics step has its gradient scaled by
``hidden_grad_scale`` (1/2), and the terms of steps 1..K (the chance terms of step k count with step
k+1, whose transition they describe) have their gradient scaled by ``1/K``, as in the deterministic
loss. Nothing here changes :func:`mz_jax.make_loss_fn`.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp

from mz_jax.core import transforms
from mz_jax.core.batch_checks import check_batch
from mz_jax.core.loss import (
    LossAux,
    LossFn,
    check_sigma,
    check_weights,
    consistency_terms,
    cross_entropy,
    l2_penalty,
    loss_from_predictions,
    turn_terms,
)
from mz_jax.core.ops import scale_gradient
from mz_jax.core.unroll import (
    StochasticUnroll,
    check_straight_through,
    unroll_stochastic_model,
)
from mz_jax.types import (
    Array,
    Batch,
    Params,
    StochasticMuZeroNetwork,
)


def chance_terms(
    unrolled: StochasticUnroll, batch: Batch, *, value_target_sigma: float = 0.0
) -> dict[str, Array]:
    """The ``[B, K]`` per-step Stochastic MuZero terms ``Q``, ``chance`` and ``commitment``
    (``value_target_sigma``: the Q targets' HL-Gauss spread, as :func:`mz_jax.make_loss_fn`'s).

    Step k (k = 0..K-1) is the transition from step k to step k+1; its Q term is masked by
    ``mask[:, k]`` (the action of a step in the data or after termination, whose target is 0), its
    chance and commitment terms by ``observation_mask[:, k]`` (the observation of step k+1 is of the
    same episode; ``mask[:, 1:]`` when the batch has none).
    """
    afterstates, codes = unrolled.afterstates, unrolled.codes
    value_support = transforms.support_size_from_bins(afterstates.value_logits.shape[-1])
    num_steps = batch.actions.shape[1]
    q = cross_entropy(
        afterstates.value_logits,
        transforms.scalar_to_support(
            batch.target_value[:, :num_steps], value_support, sigma=value_target_sigma
        ),
    )
    target_code = jax.lax.stop_gradient(codes.code)
    chance = cross_entropy(afterstates.chance_logits, target_code)
    commitment = jnp.sum(jnp.square(target_code - codes.encoding), axis=-1)
    return {"q": q, "chance": chance, "commitment": commitment}


def code_usage_entropy(soft: Array, mask: Array) -> Array:
    """``H(mean code)``: the entropy (nats) of the soft codes ``[B, K, C]`` averaged over the
    transitions where ``mask`` ``[B, K]`` is 1; ``log C`` when every code is used equally, 0 when
    one code takes everything."""
    mask = mask.astype(jnp.float32)[..., None]
    mean = jnp.sum(mask * soft, axis=(0, 1)) / jnp.maximum(jnp.sum(mask), 1.0)
    return -jnp.sum(mean * jnp.log(jnp.maximum(mean, 1e-12)))


def make_stochastic_loss_fn(
    network: StochasticMuZeroNetwork,
    *,
    value_loss_weight: float = 1.0,
    reward_loss_weight: float = 1.0,
    commitment_loss_weight: float = 1.0,
    weight_decay: float = 0.0,
    hidden_grad_scale: float = 0.5,
    consistency_loss_weight: float = 0.0,
    code_usage_weight: float = 0.0,
    value_target_sigma: float = 0.0,
    straight_through: str = "softmax",
    chance_outcome: Callable[[Array, Array, Array], Array] | None = None,
    unroll: int | bool = 1,
) -> LossFn:
    """Builds the Stochastic MuZero loss ``loss_fn(params, batch, target_params=None) -> (loss,
    LossAux)``.

    With the per-step MuZero terms ``l_k`` of :func:`mz_jax.make_loss_fn` on the unrolled states and,
    for the transition into step k >= 1 (see :func:`chance_terms`),
    ``t_k = mask_{k-1} value_loss_weight CE(Q_{k-1}, φ(z_{k-1}))
    + observation_mask_{k-1} (CE(σ_{k-1}, sg(c_k)) + commitment_loss_weight ||sg(c_k) - c^e_k||^2)``,
    the loss is ``mean_b(weight_b (l_b0 + sum_{k>=1} scale_gradient(l_bk + t_bk, 1/K)))
    + weight_decay * sum ||theta||^2 / 2``. The afterstate value is weighted as the state value is.

    The batch must carry ``next_observation`` (``[B, K, ...]``, the observations of steps 1..K), which
    the encoder reads; ``observation_mask`` masks the chance terms where it is given. A network with
    ``turn_logits`` also has the ``turn`` term of :func:`mz_jax.make_loss_fn` on ``s_1..s_K``.
    ``aux.losses`` has the MuZero terms and ``q``, ``chance``, ``commitment`` (batch means of the
    masked sums over steps, before the gradient scaling), ``code_usage`` (:func:`code_usage_entropy`,
    logged whatever ``code_usage_weight``), ``weight_decay`` and ``total``.

    Args:
      network: a :class:`~mz_jax.types.StochasticMuZeroNetwork`.
      value_loss_weight: weight of the state and afterstate value terms.
      reward_loss_weight: weight of the reward term (of the chance dynamics' rewards).
      commitment_loss_weight: β of the commitment term (the paper's VQ-VAE commitment cost).
      weight_decay: L2 coefficient on all parameters, in the loss.
      hidden_grad_scale: gradient scale of the state entering each afterstate dynamics step.
      consistency_loss_weight: EfficientZero's consistency term on ``s_1..s_K`` against the
        representations of the observations reached (:func:`mz_jax.core.loss.consistency_terms`; the
        network needs ``project`` and ``predict_projection``). A value-equivalent model has no
        reason to tell chance outcomes apart until the values differ; this term gives one.
        ``loss_fn(params, batch, target_params)`` encodes its targets with ``target_params`` (SPR's
        momentum encoder, as in :func:`mz_jax.make_loss_fn`); no other term reads them.
      code_usage_weight: u >= 0 subtracts ``u * H(mean code)`` from the loss: the entropy of the
        encoder's soft codes averaged over the batch's masked-in transitions, largest when every
        code is used equally. Not in the paper (0 leaves it out); an encoder whose codes collapse
        to one (``chance`` and ``commitment`` near 0) plans as a deterministic model.
      value_target_sigma: HL-Gauss value targets for the state and afterstate value terms, as in
        :func:`mz_jax.make_loss_fn`; 0: two-hot.
      straight_through: what the chance code's straight-through gradient reaches, the encoder's
        ``"logits"`` or their ``"softmax"`` (:func:`chance_code`).
      chance_outcome: None (the paper: codes from the encoder), or the environment's outcome of
        each transition, ``chance_outcome(observation, action, next_observation) -> int32`` in
        ``[0, C)`` for one transition (:attr:`mz_jax.envs.Env.chance_outcome`): the codes are then
        its one-hots, σ learns the true distribution of outcomes, the encoder is not run (nor
        trained) and the commitment term is 0.
      unroll: the unroll of the model's ``jax.lax.scan`` (1: one loop body; True: all K steps as
        straight-line code, the same numbers), as in :func:`mz_jax.make_loss_fn`.
    """
    _check_settings(
        network,
        weights=dict(
            value_loss_weight=value_loss_weight,
            reward_loss_weight=reward_loss_weight,
            commitment_loss_weight=commitment_loss_weight,
            weight_decay=weight_decay,
            consistency_loss_weight=consistency_loss_weight,
            code_usage_weight=code_usage_weight,
        ),
        value_target_sigma=value_target_sigma,
        straight_through=straight_through,
        chance_outcome=chance_outcome,
    )

    def loss_fn(
        params: Params, batch: Batch, target_params: Params | None = None
    ) -> tuple[Array, LossAux]:
        unrolled = _unroll_batch(
            network,
            params,
            batch,
            hidden_grad_scale=hidden_grad_scale,
            straight_through=straight_through,
            chance_outcome=chance_outcome,
            unroll=unroll,
        )
        muzero_loss, aux = _muzero_terms(
            network,
            params,
            unrolled,
            batch,
            target_params,
            value_loss_weight=value_loss_weight,
            reward_loss_weight=reward_loss_weight,
            consistency_loss_weight=consistency_loss_weight,
            value_target_sigma=value_target_sigma,
        )
        return _with_chance_terms(
            muzero_loss,
            aux,
            unrolled,
            batch,
            params,
            value_loss_weight=value_loss_weight,
            commitment_loss_weight=commitment_loss_weight,
            weight_decay=weight_decay,
            code_usage_weight=code_usage_weight,
            value_target_sigma=value_target_sigma,
        )

    return loss_fn


def _check_settings(
    network: StochasticMuZeroNetwork,
    *,
    weights: dict[str, float],
    value_target_sigma: float,
    straight_through: str,
    chance_outcome: Callable[[Array, Array, Array], Array] | None,
) -> None:
    """Refuses, with a ValueError, what :func:`make_stochastic_loss_fn` cannot build a loss from: a
    deterministic network, a negative weight among ``weights`` (name -> value), a bad
    ``value_target_sigma`` or ``straight_through``, a ``chance_outcome`` that is not callable."""
    if not isinstance(network, StochasticMuZeroNetwork):
        raise ValueError(
            f"network must be a StochasticMuZeroNetwork; got {type(network).__name__} (a "
            "deterministic MuZeroNetwork trains with mz_jax.make_loss_fn)"
        )
    check_weights(**weights)
    check_sigma(value_target_sigma)
    check_straight_through(straight_through)
    if chance_outcome is not None and not callable(chance_outcome):
        raise ValueError(
            "chance_outcome must be None or a function (observation, action, next_observation) -> "
            f"int; got {type(chance_outcome).__name__}"
        )


def _unroll_batch(
    network: StochasticMuZeroNetwork,
    params: Params,
    batch: Batch,
    *,
    hidden_grad_scale: float,
    straight_through: str,
    chance_outcome: Callable[[Array, Array, Array], Array] | None,
    unroll: int | bool,
) -> StochasticUnroll:
    """:func:`unroll_stochastic_model` along ``batch.actions`` ``[B, K]``, over the observations
    ``[B, K+1, ...]`` of ``batch.observation`` (step 0) and ``batch.next_observation`` (steps
    1..K), which the batch must carry (a ValueError otherwise, as for a malformed batch)."""
    check_batch(batch)
    if batch.next_observation is None:
        raise ValueError(
            "the Stochastic MuZero loss needs batch.next_observation [B, K, ...] (the "
            "observations of steps 1..K, which the chance encoder reads; "
            "mz_jax.make_targets(..., next_observation=True))"
        )
    observations = jax.tree.map(
        lambda first, rest: jnp.concatenate([first[:, None], rest], axis=1),
        batch.observation,
        batch.next_observation,
    )
    return unroll_stochastic_model(
        network,
        params,
        observations,
        batch.actions,
        hidden_grad_scale=hidden_grad_scale,
        straight_through=straight_through,
        chance_outcome=chance_outcome,
        unroll=unroll,
    )


def _muzero_terms(
    network: StochasticMuZeroNetwork,
    params: Params,
    unrolled: StochasticUnroll,
    batch: Batch,
    target_params: Params | None,
    *,
    value_loss_weight: float,
    reward_loss_weight: float,
    consistency_loss_weight: float,
    value_target_sigma: float,
) -> tuple[Array, LossAux]:
    """The MuZero loss of :func:`mz_jax.core.loss.loss_from_predictions` on the unrolled states,
    with the ``turn`` term where the network predicts turns and the consistency term where
    ``consistency_loss_weight`` > 0 (on ``s_1..s_K``, targets encoded with ``target_params``)."""
    turn = None
    if network.turn_logits is not None:
        turn = turn_terms(network, params, unrolled.states, batch)
    consistency = None
    if consistency_loss_weight > 0:
        consistency = consistency_terms(
            network, params, unrolled.states, batch.next_observation, target_params
        )
    return loss_from_predictions(
        unrolled.predictions,
        batch,
        value_loss_weight=value_loss_weight,
        reward_loss_weight=reward_loss_weight,
        turn=turn,
        consistency=consistency,
        consistency_loss_weight=consistency_loss_weight,
        value_target_sigma=value_target_sigma,
    )


def _with_chance_terms(
    muzero_loss: Array,
    aux: LossAux,
    unrolled: StochasticUnroll,
    batch: Batch,
    params: Params,
    *,
    value_loss_weight: float,
    commitment_loss_weight: float,
    weight_decay: float,
    code_usage_weight: float,
    value_target_sigma: float,
) -> tuple[Array, LossAux]:
    """The total loss ``(total, aux)`` of :func:`make_stochastic_loss_fn`: ``muzero_loss`` plus the
    weighted batch mean of the chance terms of steps 1..K (:func:`chance_terms`, masked and with
    their gradient scaled by ``1/K``), minus ``code_usage_weight`` times
    :func:`code_usage_entropy`, plus the L2 penalty; ``aux.losses`` gains ``q``, ``chance``,
    ``commitment``, ``code_usage``, ``weight_decay`` and ``total``."""
    terms = chance_terms(unrolled, batch, value_target_sigma=value_target_sigma)
    mask = batch.mask[:, :-1].astype(jnp.float32)
    observation_mask = (
        batch.mask[:, 1:] if batch.observation_mask is None else batch.observation_mask
    ).astype(jnp.float32)
    weight = batch.weight.astype(jnp.float32)
    step_loss = mask * value_loss_weight * terms["q"] + observation_mask * (
        terms["chance"] + commitment_loss_weight * terms["commitment"]
    )
    num_steps = batch.actions.shape[1]
    step_loss = scale_gradient(step_loss, 1.0 / num_steps)
    chance_loss = jnp.mean(weight * jnp.sum(step_loss, axis=1))
    weighted_mean = lambda m, x: jnp.mean(weight * jnp.sum(m * x, axis=1))
    weight_decay_loss = l2_penalty(params, weight_decay)
    usage = code_usage_entropy(unrolled.codes.soft, observation_mask)
    total = muzero_loss + chance_loss - code_usage_weight * usage + weight_decay_loss
    losses = {
        **aux.losses,
        "q": weighted_mean(mask, terms["q"]),
        "chance": weighted_mean(observation_mask, terms["chance"]),
        "commitment": weighted_mean(observation_mask, terms["commitment"]),
        "code_usage": usage,
        "weight_decay": weight_decay_loss,
        "total": total,
    }
    return total, aux._replace(losses=losses)


__all__ = ["chance_terms", "code_usage_entropy", "make_stochastic_loss_fn"]
