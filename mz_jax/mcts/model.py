"""The learned model as mctx's ``root_fn`` and ``recurrent_fn``: what the search tree stores and how
it steps.

:func:`make_root_fn` runs the representation and prediction functions at the root;
:func:`make_recurrent_fn` the dynamics and prediction functions at every expansion, with mctx's
per-ply discount (``-discount`` where the other player moves next). Values and rewards are decoded from
their categorical logits, and everything the tree stores is float32. A value-prefix network
(EfficientZero §4.2) keeps its LSTM carry, its last prefix and the depth in the tree
(:class:`ValuePrefixEmbedding`); rewards are prefix differences, and the carry is reset at the
depths where the loss's unroll resets it. For Stochastic MuZero, :func:`make_decision_fn` and
:func:`make_chance_fn` are mctx's decision and chance functions (afterstates and chance outcomes).
:func:`mz_jax.search` is built on these.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx

from mz_jax.core import validation
from mz_jax.core.ops import reset_reward_carry
from mz_jax.core.transforms import logits_to_scalar
from mz_jax.types import Array, MuZeroNetwork, Params, StochasticMuZeroNetwork

RootFn = Callable[[Params, Array, Any], mctx.RootFnOutput]
RecurrentFn = Callable[[Params, Array, Array, Any], tuple[mctx.RecurrentFnOutput, Any]]
DecisionFn = Callable[[Params, Array, Array, Any], tuple[mctx.DecisionRecurrentFnOutput, Any]]
ChanceFn = Callable[[Params, Array, Array, Any], tuple[mctx.ChanceRecurrentFnOutput, Any]]


class ValuePrefixEmbedding(NamedTuple):
    """What the tree stores per node for a value-prefix network (EfficientZero §4.2).

    Attributes:
      hidden: the network's hidden state ``(state, reward_carry)``, with ``reward_carry`` zeroed
        when ``depth`` is a multiple of the horizon (as the loss's unroll resets it).
      prefix: ``[B]`` the value prefix the children's rewards are measured from: the node's own
        predicted prefix, or 0 where the carry was reset (and at the root).
      depth: ``[B]`` int32, edges from the root.
    """

    hidden: Any
    prefix: Array
    depth: Array


def ply_discount(
    network: MuZeroNetwork | StochasticMuZeroNetwork,
    params: Params,
    state: Any,
    value: Array,
    *,
    discount: float,
    two_player: bool,
) -> Array:
    """mctx's ``[B]`` discount into a new ``state``: ``discount`` where the player to move there is
    the one who moved (always in a single-player game), ``-discount`` where the other player is
    (the child's value counts negatively for the parent). In a two-player game the players
    alternate, unless the network predicts turns: then the same player moves again where its
    ``turn_logits`` of ``state`` are > 0."""
    if not two_player:
        return jnp.full(value.shape, float(discount), jnp.float32)
    if network.turn_logits is None:
        return jnp.full(value.shape, -float(discount), jnp.float32)
    same = network.turn_logits(params, state) > 0
    return jnp.where(same, float(discount), -float(discount)).astype(jnp.float32)


def make_root_fn(network: MuZeroNetwork | StochasticMuZeroNetwork) -> RootFn:
    """Returns ``root_fn(params, rng_key, observation[B, ...]) -> mctx.RootFnOutput``.

    The representation and prediction functions at the root (MuZero Appendix B); the value is decoded
    from its logits and everything the tree stores is float32 whatever the network's dtype. For a
    value-prefix network the embedding is a :class:`ValuePrefixEmbedding` at depth 0.
    """

    def root_fn(params: Params, rng_key: Array, observation: Any) -> mctx.RootFnOutput:
        del rng_key  # The network is deterministic; the key is in the signature for symmetry.
        output, hidden = network.initial_inference(params, observation)
        value = logits_to_scalar(output.value_logits)
        if getattr(network, "value_prefix_horizon", None) is not None:
            zeros = jnp.zeros(value.shape, jnp.float32)
            hidden = ValuePrefixEmbedding(hidden, zeros, zeros.astype(jnp.int32))
        return mctx.RootFnOutput(
            prior_logits=output.policy_logits.astype(jnp.float32),
            value=value,
            embedding=hidden,
        )

    return root_fn


def make_recurrent_fn(network: MuZeroNetwork, *, discount: float, two_player: bool) -> RecurrentFn:
    """Returns an mctx ``recurrent_fn(params, rng_key, action[B], hidden[B, ...])``.

    The dynamics and prediction functions (MuZero Appendix B). The reward is the one predicted for
    the transition into the new state, from the perspective of the player who acted; the value is
    from the perspective of the player to move in the new state. For a value-prefix network the
    reward is the difference of consecutive predicted value prefixes, and the LSTM carry is reset
    at the depths where the loss's unroll resets it (multiples of the horizon). Where the other
    player moves next the discount is ``-discount``: the child's value counts negatively for the
    parent (:func:`ply_discount`; who moves next is predicted where the network predicts turns).

    Args:
      network: the MuZero network pair.
      discount: gamma in (0, 1].
      two_player: alternating two-player zero-sum game.
    """
    validation.check("discount", discount, kind="argument")
    validation.check("two_player", two_player, kind="argument")
    horizon = network.value_prefix_horizon

    def recurrent_fn(
        params: Params, rng_key: Array, action: Array, embedding: Any
    ) -> tuple[mctx.RecurrentFnOutput, Any]:
        del rng_key  # A deterministic model.
        hidden = embedding.hidden if horizon is not None else embedding
        output, next_hidden = network.recurrent_inference(params, hidden, action)
        turn_state = next_hidden  # before the value-prefix wrapping below
        value = logits_to_scalar(output.value_logits)
        reward = logits_to_scalar(output.reward_logits)
        if horizon is not None:
            # The logits predict the sum of rewards since the last reset; the edge's reward is the
            # difference from the parent's prefix (0 when the parent reset the carry).
            prefix = reward
            reward = prefix - embedding.prefix
            depth = embedding.depth + 1
            reset = depth % horizon == 0
            next_hidden = ValuePrefixEmbedding(
                hidden=reset_reward_carry(next_hidden, reset),
                prefix=jnp.where(reset, 0.0, prefix),
                depth=depth,
            )
        return (
            mctx.RecurrentFnOutput(
                reward=reward,
                discount=ply_discount(
                    network, params, turn_state, value, discount=discount, two_player=two_player
                ),
                prior_logits=output.policy_logits.astype(jnp.float32),
                value=value,
            ),
            next_hidden,
        )

    return recurrent_fn


def make_decision_fn(network: StochasticMuZeroNetwork) -> DecisionFn:
    """Returns mctx's ``decision_recurrent_fn(params, rng_key, action[B], state)`` for Stochastic
    MuZero: the afterstate dynamics and prediction, ``(σ logits, Q(as))`` and the afterstate.

    The afterstate value is from the perspective of the player who acted; mctx's edge from a state
    to its afterstate has no reward and discount 1, so the afterstate's value counts for that player.
    """

    def decision_fn(
        params: Params, rng_key: Array, action: Array, state: Any
    ) -> tuple[mctx.DecisionRecurrentFnOutput, Any]:
        del rng_key  # The afterstate dynamics are deterministic.
        output, afterstate = network.afterstate_inference(params, state, action)
        return (
            mctx.DecisionRecurrentFnOutput(
                chance_logits=output.chance_logits.astype(jnp.float32),
                afterstate_value=logits_to_scalar(output.value_logits),
            ),
            afterstate,
        )

    return decision_fn


def make_chance_fn(
    network: StochasticMuZeroNetwork, *, discount: float, two_player: bool
) -> ChanceFn:
    """Returns mctx's ``chance_recurrent_fn(params, rng_key, outcome[B], afterstate)`` for
    Stochastic MuZero: the chance dynamics on the one-hot code of ``outcome`` and the prediction.

    The reward is the whole transition's, from the perspective of the player who acted; the
    discount is signed by :func:`ply_discount`, as in :func:`make_recurrent_fn`: who moves after
    the chance event (backgammon: the same player while dice are left) is the network's turn
    prediction, or the other player in an alternating game.
    """
    validation.check("discount", discount, kind="argument")
    validation.check("two_player", two_player, kind="argument")

    def chance_fn(
        params: Params, rng_key: Array, outcome: Array, afterstate: Any
    ) -> tuple[mctx.ChanceRecurrentFnOutput, Any]:
        del rng_key
        code = jax.nn.one_hot(outcome, network.num_chance_outcomes, dtype=jnp.float32)
        output, state = network.recurrent_inference(params, afterstate, code)
        value = logits_to_scalar(output.value_logits)
        return (
            mctx.ChanceRecurrentFnOutput(
                action_logits=output.policy_logits.astype(jnp.float32),
                value=value,
                reward=logits_to_scalar(output.reward_logits),
                discount=ply_discount(
                    network, params, state, value, discount=discount, two_player=two_player
                ),
            ),
            state,
        )

    return chance_fn
