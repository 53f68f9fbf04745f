"""Gumbel MuZero search with chance nodes: Sequential Halving at the root of a Stochastic MuZero
tree.

mctx ships Gumbel MuZero (``gumbel_muzero_policy``) for deterministic models and Stochastic MuZero
(``stochastic_muzero_policy``) with pUCT only. :func:`gumbel_stochastic_muzero_policy` combines
them, with the parts of each unchanged:

* the tree is mctx's Stochastic MuZero tree: below every move an afterstate, a chance node whose
  outcomes are expanded where ``σ(c) / (visits(c) + 1)`` is largest, so in proportion to σ;
* at the root (always a decision node), Gumbel-Top-k and Sequential Halving choose which move each
  simulation visits (Danihelka et al., 2022, §3-4), over the legal moves;
* at decision nodes inside the tree, Full Gumbel MuZero's deterministic selection (§5), which
  visits in proportion to ``softmax(logits + σ(completed Q))``;
* the action played is the considered move with the highest ``g + logits + σ(completed Q)``, and the
  policy target is ``softmax(logits + σ(completed Q))`` over the legal moves: the improved policy,
  which moves probability towards the moves whose searched Q is higher even when the prior's
  favourite is another.

The completed Q of a move is the value backed up through its afterstate, an average over the chance
outcomes the search visited, so it estimates the expectation over chance, not the best outcome.

The combination uses mctx internals, imported in one place, :mod:`mz_jax.mcts.mctx_private`:
``StochasticRecurrentState``, four private helpers of its ``policies`` module (the ``A + C``
"actions" recurrent function, the selection wrapper that dispatches on the node type, the tree
slicing and the logit masking), ``action_selection.masked_argmax`` and
``seq_halving.score_considered``. ``tests/test_stochastic_gumbel.py`` checks the result against
mctx's own ``gumbel_muzero_policy`` on a model where the two searches must agree, so a change of
those internals shows there.
"""

from __future__ import annotations

import functools

import chex
import jax
import jax.numpy as jnp
import mctx

from mz_jax.mcts import mctx_private
from mz_jax.types import Array, Params


def gumbel_stochastic_muzero_policy(
    params: Params,
    rng_key: Array,
    root: mctx.RootFnOutput,
    decision_recurrent_fn,
    chance_recurrent_fn,
    num_simulations: int,
    invalid_actions: Array | None = None,
    max_depth: int | None = None,
    loop_fn: mctx.LoopFn = jax.lax.fori_loop,
    *,
    qtransform=mctx.qtransform_completed_by_mix_value,
    max_num_considered_actions: int = 16,
    gumbel_scale: chex.Numeric = 1.0,
) -> mctx.PolicyOutput:
    """Runs Gumbel MuZero search on a Stochastic MuZero model; mctx's conventions throughout.

    Args:
      params: forwarded to the decision and chance functions.
      rng_key: a PRNG key, consumed.
      root: ``(prior_logits [B, A], value [B], embedding [B, ...])`` of the root states.
      decision_recurrent_fn: ``(params, rng_key, action[B], state) ->
        (mctx.DecisionRecurrentFnOutput, afterstate)``, as for ``mctx.stochastic_muzero_policy``.
      chance_recurrent_fn: ``(params, rng_key, outcome[B], afterstate) ->
        (mctx.ChanceRecurrentFnOutput, state)``, likewise.
      num_simulations: the number of simulations.
      invalid_actions: ``[B, A]``, ones (True) at the root's illegal moves; None: all are legal.
      max_depth: the largest depth of a simulation (decision and chance edges both count), or None.
      loop_fn: the loop over simulations.
      qtransform: the completed-Q transform σ, ``(tree, node_index) -> [A]`` (mctx's
        ``qtransform_completed_by_mix_value`` with its settings bound).
      max_num_considered_actions: the number of moves sampled by Gumbel-Top-k at the root (fewer
        where fewer are legal).
      gumbel_scale: scale of the root Gumbel noise; 0 searches deterministically.

    Returns:
      ``mctx.PolicyOutput``: the action, the improved policy as ``action_weights`` ``[B, A]``, and
      the search tree with its children cut to the A moves (as ``stochastic_muzero_policy``
      returns it).
    """
    num_actions = root.prior_logits.shape[-1]
    root = root.replace(
        prior_logits=mctx_private.mask_invalid_actions(root.prior_logits, invalid_actions)
    )
    rng_key, gumbel_key, dummy_key = jax.random.split(rng_key, 3)
    gumbel = gumbel_scale * jax.random.gumbel(
        gumbel_key, shape=root.prior_logits.shape, dtype=root.prior_logits.dtype
    )
    tree_root, recurrent_fn = _chance_tree_model(
        params, dummy_key, root, decision_recurrent_fn, chance_recurrent_fn
    )
    tree = mctx.search(
        params=params,
        rng_key=rng_key,
        root=tree_root,
        recurrent_fn=recurrent_fn,
        root_action_selection_fn=functools.partial(
            _root_action_selection,
            num_actions=num_actions,
            num_simulations=num_simulations,
            max_num_considered_actions=max_num_considered_actions,
            qtransform=qtransform,
        ),
        interior_action_selection_fn=mctx_private.make_stochastic_action_selection_fn(
            functools.partial(mctx.gumbel_muzero_interior_action_selection, qtransform=qtransform),
            num_actions,
        ),
        num_simulations=num_simulations,
        max_depth=max_depth,
        invalid_actions=invalid_actions,
        extra_data=mctx.GumbelMuZeroExtraData(root_gumbel=gumbel),
        loop_fn=loop_fn,
    )
    tree = _decisions(tree, num_actions)
    action, weights = _played_action_and_policy(
        tree, gumbel, root.prior_logits, invalid_actions, qtransform
    )
    return mctx.PolicyOutput(action=action, action_weights=weights, search_tree=tree)


def _chance_tree_model(
    params: Params,
    rng_key: Array,
    root: mctx.RootFnOutput,
    decision_recurrent_fn,
    chance_recurrent_fn,
) -> tuple[mctx.RootFnOutput, mctx.RecurrentFn]:
    """The root and the recurrent function of mctx's Stochastic MuZero tree.

    mctx's tree has ``A + C`` "actions": a node's children are either its A moves (a decision
    node) or its C chance outcomes (an afterstate). The root is a decision node: its prior logits
    ``[B, A]`` get C more at ``-inf``, and its embedding carries a placeholder afterstate of the
    right structure (one call of ``decision_recurrent_fn`` with action 0 and ``rng_key``, which
    also tells C). The recurrent function dispatches each edge to the decision or the chance
    function by the node type.
    """
    batch_size, num_actions = root.prior_logits.shape
    dummy_output, dummy_afterstate = decision_recurrent_fn(
        params, rng_key, jnp.zeros([batch_size], jnp.int32), root.embedding
    )
    num_chance_outcomes = dummy_output.chance_logits.shape[-1]
    tree_root = root.replace(
        prior_logits=jnp.concatenate(
            [root.prior_logits, jnp.full([batch_size, num_chance_outcomes], -jnp.inf)], axis=-1
        ),
        embedding=mctx_private.StochasticRecurrentState(
            state_embedding=root.embedding,
            afterstate_embedding=dummy_afterstate,
            is_decision_node=jnp.ones([batch_size], bool),
        ),
    )
    recurrent_fn = mctx_private.make_stochastic_recurrent_fn(
        decision_node_fn=decision_recurrent_fn,
        chance_node_fn=chance_recurrent_fn,
        num_actions=num_actions,
        num_chance_outcomes=num_chance_outcomes,
    )
    return tree_root, recurrent_fn


def _decisions(tree: mctx.Tree, num_actions: int) -> mctx.Tree:
    """``tree`` with every node's children cut to its ``num_actions`` moves (as a decision node)."""
    return mctx_private.mask_tree(tree, num_actions, "decision")


def _root_action_selection(
    rng_key: Array,
    tree: mctx.Tree,
    node_index: Array,
    *,
    num_actions: int,
    num_simulations: int,
    max_num_considered_actions: int,
    qtransform,
) -> Array:
    """Gumbel MuZero's root selection (Sequential Halving) over the root's A moves."""
    return mctx.gumbel_muzero_root_action_selection(
        rng_key,
        _decisions(tree, num_actions),
        node_index,
        num_simulations=num_simulations,
        max_num_considered_actions=max_num_considered_actions,
        qtransform=qtransform,
    )


def _played_action_and_policy(
    tree: mctx.Tree, gumbel: Array, prior_logits: Array, invalid_actions: Array | None, qtransform
) -> tuple[Array, Array]:
    """``(action [B], weights [B, A])`` as mctx's ``gumbel_muzero_policy`` reads them off a tree
    cut to its moves: the best of the most visited considered moves by ``g + logits + σ(completed
    Q)``, and the improved policy ``softmax(logits + σ(completed Q))`` over the valid moves."""
    visit_counts = tree.summary().visit_counts
    considered_visit = jnp.max(visit_counts, axis=-1, keepdims=True)
    completed_q = jax.vmap(qtransform, in_axes=(0, None))(tree, tree.ROOT_INDEX)
    to_argmax = mctx_private.score_considered(
        considered_visit, gumbel, prior_logits, completed_q, visit_counts
    )
    action = mctx_private.masked_argmax(to_argmax, invalid_actions)
    weights = jax.nn.softmax(
        mctx_private.mask_invalid_actions(prior_logits + completed_q, invalid_actions)
    )
    return action, weights
