"""Batched MuZero and Gumbel MuZero search on a learned model, with mctx.

Two policies over the same pair of network functions:

* ``"muzero"``: pUCT search with Dirichlet noise at the root, acting by the root visit counts
  (Schrittwieser et al., 2020, Appendix B; Silver et al., 2018 for the noise).
* ``"gumbel"``: Gumbel MuZero, Sequential Halving with Gumbel at the root and the deterministic
  completed-Q selection inside the tree; its policy target is ``softmax(logits + sigma(completed Q))``
  (Danihelka et al., 2022, "Policy improvement by planning with Gumbel").

A :class:`~mz_jax.types.StochasticMuZeroNetwork` is searched with chance nodes: below every move
an afterstate, a chance node whose outcomes are expanded in proportion to the predicted σ
(Antonoglou et al., 2022). The muzero policy is mctx's ``stochastic_muzero_policy``; the gumbel
policy is :func:`mz_jax.mcts.chance_gumbel.gumbel_stochastic_muzero_policy`, Sequential Halving at
the root of the same tree. The root's handling below is the same for all four.

Values and rewards come out of the network as categorical logits and are decoded with
:func:`mz_jax.core.transforms.logits_to_scalar`. Values are from the perspective of the player to move and
rewards from the perspective of the player who acted; in two-player alternating games mctx's discount
between plies is therefore ``-discount``.

What this module adds to mctx: the legal-action mask becomes a guarantee (the chosen action is legal
whenever any action is, even for the MuZero policy at high temperature, where mctx can sample an
action that was never visited); rows with no legal action (finished games) are searched harmlessly and
flagged; non-finite root predictions are replaced before the search (so the tree stays finite and the
action stays legal) and reported as NaN in the outputs instead of being hidden.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx

from mz_jax.config.search import SearchConfig
from mz_jax.mcts.chance_gumbel import gumbel_stochastic_muzero_policy
from mz_jax.mcts.model import make_chance_fn, make_decision_fn, make_recurrent_fn, make_root_fn
from mz_jax.types import Array, MuZeroNetwork, Params, StochasticMuZeroNetwork


class SearchOutput(NamedTuple):
    """The result of one batched search over B states with A actions.

    Attributes:
      action: ``[B]`` int32, the action to play; legal whenever the row has a legal action (0 otherwise).
      policy: ``[B, A]`` float32, the policy target: the root visit distribution (muzero) or the
        Gumbel MuZero improved policy (gumbel, or muzero with ``policy_target="completed_q"``).
        Zero on illegal actions, all zeros on rows without a legal action, all NaN on rows whose
        root prediction was not finite.
      root_value: ``[B]`` float32, the search value of the root (mctx ``summary().value``) from the
        perspective of the player to move; 0 on rows without a legal action, NaN on rows whose
        root prediction was not finite.
      has_legal_action: ``[B]`` bool, False for rows where no action is legal (a finished game):
        such rows are searched as if all actions were legal, to keep the batch finite, and their
        other outputs carry no meaning.
    """

    action: Array
    policy: Array
    root_value: Array
    has_legal_action: Array


def search(
    params: Params,
    rng_key: Array,
    observation: Any,
    legal_action_mask: Array,
    *,
    network: MuZeroNetwork | StochasticMuZeroNetwork,
    config: SearchConfig,
    temperature: float | Array = 1.0,
    greedy: bool = False,
) -> SearchOutput:
    """Searches from B root observations and proposes an action for each.

    Args:
      params: network parameters, forwarded to both network functions.
      rng_key: a PRNG key, consumed.
      observation: ``[B, ...]`` root observations (or a pytree of them).
      legal_action_mask: ``[B, A]`` bool, True where an action is legal at the root. Legality is
        only known at the root; inside the tree the model's prior decides.
      network: the MuZero network pair, or a Stochastic MuZero network: its search has chance
        nodes below every move, whose outcomes are visited in proportion to the predicted σ
        (Antonoglou et al., 2022), with either policy.
      config: search settings.
      temperature: muzero policy only: act by ``visits ** (1 / temperature)``; 0 acts by the most
        visited action (ties broken at random). May be a traced scalar (a schedule by training
        progress); a Python number must be finite and >= 0, a traced one is clipped below at the
        smallest positive float. The gumbel policy ignores it: Sequential Halving chooses.
      greedy: evaluation mode (static): no Dirichlet noise and ``gumbel_scale`` 0, the action is the
        most visited legal action (muzero; ties to the lowest index) or the Gumbel policy's
        deterministic choice, and the tree's tie-breaking uses a fixed key, so the result depends on
        ``params`` and ``observation`` alone.

    Returns:
      A :class:`SearchOutput`.

    Raises:
      ValueError: for mismatched shapes (at trace time) or a bad Python ``temperature``.
    """
    return search_with_tree(
        params,
        rng_key,
        observation,
        legal_action_mask,
        network=network,
        config=config,
        temperature=temperature,
        greedy=greedy,
    )[0]


def search_with_tree(
    params: Params,
    rng_key: Array,
    observation: Any,
    legal_action_mask: Array,
    *,
    network: MuZeroNetwork | StochasticMuZeroNetwork,
    config: SearchConfig,
    temperature: float | Array = 1.0,
    greedy: bool = False,
) -> tuple[SearchOutput, mctx.Tree]:
    """:func:`search`, with the tree it built: ``(SearchOutput, tree)``.

    ``tree`` is mctx's :class:`mctx.Tree` with batch B (``node_visits [B, N]``, ``node_values
    [B, N]``, ``children_index [B, N, A]``, ``children_prior_logits``, ``children_visits``,
    ``children_values`` ..., node 0 the root; N = ``num_simulations + 1``). Values are from the
    perspective of the player to move at each node. Under ``jit``, :func:`search` leaves it out.
    """
    legal_action_mask = _checked_inputs(
        observation, legal_action_mask, config=config, temperature=temperature
    )
    batch_size, num_actions = legal_action_mask.shape
    root_key, search_key, action_key = jax.random.split(rng_key, 3)
    if greedy:
        # Evaluation is a function of the position alone: mctx still draws tie-breaking noise and
        # (scaled to nothing) Dirichlet and Gumbel samples from the key.
        search_key = jax.random.key(0)

    root = make_root_fn(network)(params, root_key, observation)
    if root.prior_logits.shape != (batch_size, num_actions):
        raise ValueError(
            f"the network's policy_logits have shape {root.prior_logits.shape}; the legal action "
            f"mask needs [B, A] = {(batch_size, num_actions)}"
        )
    legal, has_legal_action = _searched_legal_actions(legal_action_mask)
    root, root_not_finite = _finite_root(root)

    model, puct_policy, gumbel_policy = _model_and_policies(network, config)
    if config.policy == "muzero":
        policy_output, action = _puct_search(
            params,
            (root_key, search_key, action_key),
            root,
            legal,
            model=model,
            policy=puct_policy,
            config=config,
            temperature=temperature,
            greedy=greedy,
        )
    else:
        policy_output, action = _gumbel_search(
            params,
            search_key,
            root,
            legal,
            model=model,
            policy=gumbel_policy,
            config=config,
            greedy=greedy,
        )
    output = _search_output(policy_output, action, has_legal_action, root_not_finite)
    return output, policy_output.search_tree


def _checked_inputs(
    observation: Any, legal_action_mask: Any, *, config: SearchConfig, temperature: float | Array
) -> Array:
    """``legal_action_mask`` as an array, once the inputs pass :func:`search`'s checks.

    Raises:
      ValueError: a config that is not a complete :class:`SearchConfig`, a mask that is not
        ``[B, A]``, an observation whose leaves do not all have the mask's leading axis B, a
        Python ``temperature`` that is negative or not finite.
    """
    if not isinstance(config, SearchConfig):
        raise ValueError(f"config must be a SearchConfig; got {type(config).__name__}")
    legal_action_mask = jnp.asarray(legal_action_mask)
    if legal_action_mask.ndim != 2:
        raise ValueError(
            f"legal_action_mask must have shape [B, A]; got shape {legal_action_mask.shape}"
        )
    batch_size = legal_action_mask.shape[0]
    observation_batch_sizes = {
        jnp.shape(x)[0] if jnp.ndim(x) else None for x in jax.tree.leaves(observation)
    }
    if observation_batch_sizes != {batch_size}:
        raise ValueError(
            f"observation's leading (batch) axis must equal legal_action_mask's, {batch_size}; got "
            f"{sorted(observation_batch_sizes, key=str)}"
        )
    python_number = isinstance(temperature, int | float) and not isinstance(temperature, bool)
    if python_number and not (math.isfinite(temperature) and temperature >= 0):
        raise ValueError(f"temperature must be finite and >= 0; got {temperature!r}")
    _check_derived_fields(config)
    return legal_action_mask


def _check_derived_fields(config: SearchConfig) -> None:
    """Raises unless the fields training derives from the environment are set."""
    for name in ("discount", "two_player"):
        if getattr(config, name) is None:
            raise ValueError(
                f"SearchConfig.{name} is None: a direct call of search() needs it set (training "
                "derives it: mz_jax.training.build sets it from TrainConfig and the environment)"
            )


def _searched_legal_actions(legal_action_mask: Array) -> tuple[Array, Array]:
    """``(legal [B, A], has_legal_action [B])``: the actions the search may take, and which rows
    have any legal action.

    A finished game has no legal action; searching it with an empty mask gives mctx's arbitrary
    action 0 and uniform weights. Searching it as all-legal keeps the batch finite; the row is
    flagged instead.
    """
    legal = legal_action_mask.astype(bool)
    has_legal_action = jnp.any(legal, axis=-1)
    return legal | ~has_legal_action[:, None], has_legal_action


def _finite_root(root: mctx.RootFnOutput) -> tuple[mctx.RootFnOutput, Array]:
    """``(root, root_not_finite [B])``: the root with finite stand-ins for its non-finite
    predictions, and the rows that had one.

    A NaN or +inf logit would make every masked softmax of the row NaN (mctx subtracts the max),
    which the muzero policy then hides behind a plausible visit distribution. Search on finite
    stand-ins (0, or for a -inf logit, a legitimate zero probability, the most negative finite
    logit) and report the row as NaN so that the caller's finiteness checks see it.
    """
    logits = root.prior_logits
    root_not_finite = jnp.any(jnp.isnan(logits) | jnp.isposinf(logits), axis=-1) | ~jnp.isfinite(
        root.value
    )
    min_logit = jnp.finfo(logits.dtype).min
    logits = jnp.where(
        jnp.isneginf(logits), min_logit, jnp.where(jnp.isfinite(logits), logits, 0.0)
    )
    root = root.replace(
        prior_logits=logits, value=jnp.where(jnp.isfinite(root.value), root.value, 0.0)
    )
    return root, root_not_finite


def _model_and_policies(
    network: MuZeroNetwork | StochasticMuZeroNetwork, config: SearchConfig
) -> tuple[tuple, Callable, Callable]:
    """``(model, puct_policy, gumbel_policy)``: the model as a tuple of the functions mctx's
    policies take after the root (one recurrent function; or the decision and chance functions of
    a Stochastic MuZero network), and the pUCT and Gumbel policies over it."""
    if isinstance(network, StochasticMuZeroNetwork):
        model = (
            make_decision_fn(network),
            make_chance_fn(network, discount=config.discount, two_player=config.two_player),
        )
        return model, mctx.stochastic_muzero_policy, gumbel_stochastic_muzero_policy
    model = (make_recurrent_fn(network, discount=config.discount, two_player=config.two_player),)
    return model, mctx.muzero_policy, mctx.gumbel_muzero_policy


def _completed_q(config: SearchConfig) -> Callable:
    """mctx's completed-Q transform σ, ``(tree, node_index) -> [A]``, with ``config``'s settings."""
    return functools.partial(
        mctx.qtransform_completed_by_mix_value,
        value_scale=config.value_scale,
        maxvisit_init=config.maxvisit_init,
        rescale_values=config.rescale_values,
        epsilon=config.rescale_min_range,
    )


def _puct_search(
    params: Params,
    keys: tuple[Array, Array, Array],
    root: mctx.RootFnOutput,
    legal: Array,
    *,
    model: tuple,
    policy: Callable,
    config: SearchConfig,
    temperature: float | Array,
    greedy: bool,
) -> tuple[mctx.PolicyOutput, Array]:
    """The muzero policy's ``(policy_output, action [B])`` (MuZero Appendix B).

    ``keys`` are :func:`search`'s ``(root_key, search_key, action_key)``. Dirichlet noise over the
    legal actions (:func:`_noisy_legal_prior`) unless ``greedy``; the action among the visited
    legal actions (:func:`_sample_by_visit_counts`; greedy: the most visited); with
    ``policy_target="completed_q"`` the policy target is Gumbel MuZero's improved policy on the
    prior before the noise.
    """
    root_key, search_key, action_key = keys
    num_actions = legal.shape[-1]
    invalid_actions = ~legal
    prior_logits = root.prior_logits  # before the Dirichlet noise
    if not greedy and config.dirichlet_fraction > 0:
        root = root.replace(
            prior_logits=_noisy_legal_prior(
                jax.random.fold_in(root_key, 1),
                root.prior_logits,
                legal,
                alpha=config.dirichlet_alpha,
                fraction=config.dirichlet_fraction,
            )
        )
    if config.value_bounds is None:
        qtransform = mctx.qtransform_by_parent_and_siblings
    else:
        qtransform = functools.partial(
            mctx.qtransform_by_min_max,
            min_value=config.value_bounds[0],
            max_value=config.value_bounds[1],
        )
    policy_output = policy(
        params,
        search_key,
        root,
        *model,
        config.num_simulations,
        invalid_actions=invalid_actions,
        max_depth=config.max_depth,
        qtransform=qtransform,
        dirichlet_fraction=0.0,  # mixed in above, over the legal actions only
        dirichlet_alpha=config.dirichlet_alpha,
        pb_c_init=config.pb_c_init,
        pb_c_base=config.pb_c_base,
    )
    # A stochastic tree's children are A actions then C chance outcomes: the root's are actions.
    visit_counts = policy_output.search_tree.summary().visit_counts[:, :num_actions]
    # mctx samples from log(max(visit_probs, tiny)) / temperature, which leaves unvisited and
    # illegal actions a probability that grows with the temperature; act only among visited
    # actions instead, so the action is legal by construction.
    if greedy:
        action = jnp.argmax(jnp.where(legal, visit_counts, -1.0), axis=-1)
    else:
        action = _sample_by_visit_counts(action_key, visit_counts, legal, temperature)
    if config.policy_target == "completed_q":
        tree = policy_output.search_tree  # a stochastic tree comes back masked to its actions
        sigma = jax.vmap(_completed_q(config), in_axes=(0, None))(tree, tree.ROOT_INDEX)
        logits = jnp.where(legal, prior_logits + sigma[:, :num_actions], -jnp.inf)
        policy_output = policy_output.replace(action_weights=jax.nn.softmax(logits, axis=-1))
    return policy_output, action


def _gumbel_search(
    params: Params,
    search_key: Array,
    root: mctx.RootFnOutput,
    legal: Array,
    *,
    model: tuple,
    policy: Callable,
    config: SearchConfig,
    greedy: bool,
) -> tuple[mctx.PolicyOutput, Array]:
    """The gumbel policy's ``(policy_output, action [B])`` (Danihelka et al., 2022): Sequential
    Halving over at most ``max_num_considered_actions`` legal actions, no Gumbel noise when
    ``greedy``."""
    num_actions = legal.shape[-1]
    policy_output = policy(
        params,
        search_key,
        root,
        *model,
        config.num_simulations,
        invalid_actions=~legal,
        max_depth=config.max_depth,
        qtransform=_completed_q(config),
        max_num_considered_actions=min(config.max_num_considered_actions, num_actions),
        gumbel_scale=0.0 if greedy else config.gumbel_scale,
    )
    # The argmax is over legal actions only (mctx's masked_argmax): legal by construction.
    return policy_output, policy_output.action


def _search_output(
    policy_output: mctx.PolicyOutput, action: Array, has_legal_action: Array, root_not_finite: Array
) -> SearchOutput:
    """The :class:`SearchOutput` of a search: its policy and root value zeroed on rows without a
    legal action and NaN on rows whose root prediction was not finite, the action 0 on rows
    without a legal action."""
    policy = jnp.where(has_legal_action[:, None], policy_output.action_weights, 0.0)
    policy = jnp.where(root_not_finite[:, None], jnp.nan, policy)
    root_value = policy_output.search_tree.summary().value
    root_value = jnp.where(has_legal_action, root_value, 0.0)
    root_value = jnp.where(root_not_finite, jnp.nan, root_value)
    return SearchOutput(
        action=jnp.where(has_legal_action, action, 0).astype(jnp.int32),
        policy=policy.astype(jnp.float32),
        root_value=root_value.astype(jnp.float32),
        has_legal_action=has_legal_action,
    )


def _sample_by_visit_counts(
    rng_key: Array, visit_counts: Array, legal: Array, temperature: float | Array
) -> Array:
    """Samples ``[B]`` actions with probability proportional to ``visits ** (1 / temperature)``.

    Only visited legal actions can be drawn; the root's action selection visits only legal actions
    and every search makes at least one visit, so every row has one.
    """
    visited = legal & (visit_counts > 0)
    logits = jnp.where(visited, jnp.log(jnp.where(visited, visit_counts, 1.0)), -jnp.inf)
    # Subtracting the max keeps the division by a tiny temperature from overflowing to +inf.
    logits = logits - jnp.max(logits, axis=-1, keepdims=True)
    tiny = jnp.finfo(logits.dtype).tiny
    logits = logits / jnp.maximum(jnp.asarray(temperature, logits.dtype), tiny)
    return jax.random.categorical(rng_key, logits, axis=-1)


def _noisy_legal_prior(
    rng_key: Array, logits: Array, legal: Array, *, alpha: float, fraction: float
) -> Array:
    """Root prior logits ``log((1 - f) p + f n)`` with ``p`` the prior over the legal actions and
    ``n ~ Dirichlet(alpha)`` over the legal actions only (AlphaZero, MuZero Appendix C).

    mctx mixes its noise over all A actions before masking, so with 2 of 9 moves legal only about
    ``f * 2 / 9`` of the prior would be noise; here it is ``f`` whatever the number of legal moves.
    Illegal actions get the smallest finite logit (mctx masks them again).
    """
    prior = jax.nn.softmax(jnp.where(legal, logits, -jnp.inf), axis=-1)
    gamma = jnp.where(legal, jax.random.gamma(rng_key, alpha, logits.shape, jnp.float32), 0.0)
    total = jnp.sum(gamma, axis=-1, keepdims=True)
    # Every legal draw can underflow to 0 for a tiny alpha: the noise is then uniform over them.
    uniform = legal / jnp.sum(legal, axis=-1, keepdims=True)
    noise = jnp.where(total > 0, gamma / jnp.where(total > 0, total, 1.0), uniform)
    mixed = (1.0 - fraction) * prior + fraction * noise
    min_logit = jnp.finfo(jnp.float32).min
    return jnp.where(legal & (mixed > 0), jnp.log(jnp.where(mixed > 0, mixed, 1.0)), min_logit)
