"""Sampled MuZero's search (Hubert et al., 2021, "Learning and Planning in Complex Action Spaces").

At every expanded node K actions are drawn from a proposal β, the network's policy π at that node,
and the node's K children are those samples. The search's prior over them is the paper's
β̂/β · π (§4.1; :func:`mz_jax.core.sampled.sampled_prior_logits`), which with β = π is the
samples' empirical distribution. Everything else is MuZero's or Gumbel MuZero's search
(:func:`mz_jax.mcts.policies.search`), run by mctx over K children instead of A actions.

The sampled actions ride in the tree's embedding (:class:`SampledEmbedding`): mctx hands the
recurrent function a child's index, which it maps to that child's action before the dynamics, and
the new node's K samples are drawn there. The network is a :class:`~mz_jax.types.MuZeroNetwork`
whose ``policy_logits`` are the parameters of the policy's distribution and whose
``recurrent_inference`` takes one action of the environment's action shape a row (an int32 index
for a discrete environment, a float vector for a continuous one); an :class:`ActionSampler` says
how to draw and score actions from those parameters.

With sampling without replacement and K equal to the number of actions of a discrete environment
(:func:`categorical_without_replacement`), every node's children are all the actions in order and
the priors are π: the search is ordinary MuZero's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import mctx

from mz_jax.config.search import SearchConfig
from mz_jax.core import sampled
from mz_jax.mcts.model import make_recurrent_fn, make_root_fn
from mz_jax.mcts.policies import (
    _check_derived_fields,
    _finite_root,
    _gumbel_search,
    _puct_search,
    _search_output,
)
from mz_jax.types import Array, MuZeroNetwork, Params

LOG_STD_BOUNDS = (-5.0, 2.0)
"""The squashed Gaussian's ``log_std`` is clipped to this range before use."""


class ActionSampler(NamedTuple):
    """How a policy head's output proposes actions and scores them.

    Attributes:
      sample: ``(key, policy_logits [B, P], num_samples, legal_action_mask [B, A] | None,
        temperature) -> actions [B, K, *action_shape]``, K draws from the proposal β: the policy,
        flattened by ``temperature`` (1 at interior nodes); the mask is given at the root of a
        discrete search only.
      prior_logits: ``(policy_logits [B, P], actions [B, K, ...], temperature) -> [B, K]``, the
        logits of the search's prior over the samples, β̂/β · π for the β of that temperature.
      log_prob: ``(policy_logits [B, P], actions [B, K, ...]) -> [B, K]``, log π(a_k), for the
        loss.
    """

    sample: Callable[[Array, Array, int, Array | None, float], Array]
    prior_logits: Callable[[Array, Array, float], Array]
    log_prob: Callable[[Array, Array], Array]


def categorical_without_replacement() -> ActionSampler:
    """A discrete policy (``policy_logits [B, A]``) sampled without replacement (Gumbel-top-k) from
    ``softmax(logits / temperature)``, the samples in action order; the prior over them is π
    itself, whatever the temperature (β̂/β is not defined for draws without replacement; with
    K = A this is MuZero's prior)."""

    def sample(
        key: Array, logits: Array, num_samples: int, legal: Array | None, temperature: float
    ) -> Array:
        logits = logits / temperature
        if legal is not None:
            logits = jnp.where(legal, logits, -jnp.inf)
        return sampled.sample_without_replacement(key, logits, num_samples=num_samples)

    def log_prob(logits: Array, actions: Array) -> Array:
        return jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), actions, axis=-1)

    def prior_logits(logits: Array, actions: Array, temperature: float) -> Array:
        del temperature
        return log_prob(logits, actions)

    return ActionSampler(sample=sample, prior_logits=prior_logits, log_prob=log_prob)


def squashed_gaussian(low: Any, high: Any) -> ActionSampler:
    """A diagonal Gaussian squashed by tanh into the Box ``[low, high]`` (``[D]`` each):
    ``policy_logits [B, 2D]`` are the mean and ``log_std`` (clipped to :data:`LOG_STD_BOUNDS`)
    in the tanh's input space. The proposal at temperature τ is the same Gaussian with its
    standard deviation times √τ (π at τ = 1, where the prior over K distinct draws is uniform).

    Raises:
      ValueError: for bounds that are not finite or not ``low < high``.
    """
    low, high = jnp.asarray(low, jnp.float32), jnp.asarray(high, jnp.float32)
    sampled.check_box(low, high)

    def split(params: Array) -> tuple[Array, Array]:
        mean, log_std = jnp.split(params, 2, axis=-1)
        return mean, jnp.clip(log_std, *LOG_STD_BOUNDS)

    def sample(
        key: Array, params: Array, num_samples: int, legal: Array | None, temperature: float
    ) -> Array:
        del legal  # every point of the Box is an action
        mean, log_std = split(params)
        return sampled.squashed_gaussian_sample(
            key,
            mean,
            log_std + 0.5 * jnp.log(temperature),
            low=low,
            high=high,
            num_samples=num_samples,
        )

    def log_prob(params: Array, actions: Array) -> Array:
        mean, log_std = split(params)
        return sampled.squashed_gaussian_log_prob(mean, log_std, actions, low=low, high=high)

    def prior_logits(params: Array, actions: Array, temperature: float) -> Array:
        mean, log_std = split(params)
        log_pi = log_prob(params, actions)
        log_beta = sampled.squashed_gaussian_log_prob(
            mean, log_std + 0.5 * jnp.log(temperature), actions, low=low, high=high
        )
        counts = jnp.ones(actions.shape[:2], jnp.int32)  # continuous draws are distinct
        return sampled.sampled_prior_logits(log_pi, log_beta, counts, num_samples=actions.shape[1])

    return ActionSampler(sample=sample, prior_logits=prior_logits, log_prob=log_prob)


class SampledEmbedding(NamedTuple):
    """What the tree stores a node: the model's hidden state and the node's sampled actions.

    Attributes:
      hidden: the embedding the ordinary search would store (:mod:`mz_jax.mcts.model`).
      actions: ``[B, K, *action_shape]``, the actions of the node's K children.
    """

    hidden: Any
    actions: Array


class SampledSearchOutput(NamedTuple):
    """The result of one batched sampled search over B states.

    Attributes:
      action: ``[B, *action_shape]``, the action to play: one of the root's samples.
      action_index: ``[B]`` int32, its index among them.
      sampled_actions: ``[B, K, *action_shape]``, the root's samples (the replay keeps them with
        ``policy``: the policy target lives on them).
      policy: ``[B, K]`` float32, the policy target over the samples (visit distribution, or
        Gumbel MuZero's improved policy), NaN on rows whose root prediction was not finite.
      root_value: ``[B]`` float32, the search value of the root.
      tree: the mctx tree (``[B, ...]``, K children a node).
    """

    action: Array
    action_index: Array
    sampled_actions: Array
    policy: Array
    root_value: Array
    tree: mctx.Tree


def sampled_search(
    params: Params,
    rng_key: Array,
    observation: Any,
    legal_action_mask: Array | None = None,
    *,
    network: MuZeroNetwork,
    sampler: ActionSampler,
    num_samples: int,
    config: SearchConfig,
    temperature: float | Array = 1.0,
    proposal_temperature: float = 1.0,
    greedy: bool = False,
) -> SampledSearchOutput:
    """Searches from B root observations over K sampled actions a node; proposes an action each.

    Args:
      params: network parameters.
      rng_key: a PRNG key, consumed; the root's samples, the search and the action use keys split
        from it as :func:`mz_jax.mcts.policies.search` does, so that with K = A discrete
        actions drawn without replacement the two searches are the same.
      observation: ``[B, ...]`` root observations.
      legal_action_mask: ``[B, A]`` bool for a discrete environment (the root samples legal
        actions only, so at least K must be legal a row); None where every action is legal.
      network: the model; ``policy_logits`` parametrise ``sampler``'s distribution.
      sampler: how actions are drawn and scored (:func:`categorical_without_replacement`,
        :func:`squashed_gaussian`).
      num_samples: K >= 2, the children of every node.
      config: search settings, as for :func:`~mz_jax.mcts.policies.search`.
      temperature: muzero policy only: act by ``visits ** (1 / temperature)`` among the samples.
      proposal_temperature: τ > 0 of the root's proposal β (the paper's exploration at the
        root, §4): a wider proposal than π, the prior corrected for it by β̂/β · π. 1 in
        ``greedy`` mode and at every other node.
      greedy: evaluation mode: no root noise, the most visited sample (or Gumbel's choice), and
        fixed keys for the samples and the tree, so the result depends on ``params`` and
        ``observation`` alone.

    Raises:
      ValueError: for ``num_samples`` < 2, ``proposal_temperature`` <= 0, or
        ``config.discount`` or ``config.two_player`` None.
    """
    if isinstance(num_samples, bool) or not isinstance(num_samples, int) or num_samples < 2:
        raise ValueError(f"num_samples {num_samples!r} is invalid: allowed an integer >= 2")
    if not (isinstance(proposal_temperature, int | float) and proposal_temperature > 0):
        raise ValueError(
            f"proposal_temperature {proposal_temperature!r} is invalid: allowed a number > 0"
        )
    _check_derived_fields(config)
    root_key, search_key, action_key = jax.random.split(rng_key, 3)
    sample_key = jax.random.fold_in(rng_key, 2)
    if greedy:
        search_key, sample_key = jax.random.key(0), jax.random.key(1)
        proposal_temperature = 1.0

    root = make_root_fn(network)(params, root_key, observation)
    actions = sampler.sample(
        sample_key, root.prior_logits, num_samples, legal_action_mask, proposal_temperature
    )
    batch_size = actions.shape[0]
    root = root.replace(
        prior_logits=sampler.prior_logits(root.prior_logits, actions, proposal_temperature),
        embedding=SampledEmbedding(root.embedding, actions),
    )
    root, root_not_finite = _finite_root(root)
    recurrent_fn = _sampled_recurrent_fn(network, sampler, num_samples, config)
    all_samples = jnp.ones((batch_size, num_samples), bool)  # each sample is a legal action
    if config.policy == "muzero":
        policy_output, index = _puct_search(
            params,
            (root_key, search_key, action_key),
            root,
            all_samples,
            model=(recurrent_fn,),
            policy=mctx.muzero_policy,
            config=config,
            temperature=temperature,
            greedy=greedy,
        )
    else:
        policy_output, index = _gumbel_search(
            params,
            search_key,
            root,
            all_samples,
            model=(recurrent_fn,),
            policy=mctx.gumbel_muzero_policy,
            config=config,
            greedy=greedy,
        )
    output = _search_output(policy_output, index, jnp.ones(batch_size, bool), root_not_finite)
    chosen = _take(actions, output.action)
    return SampledSearchOutput(
        action=chosen,
        action_index=output.action,
        sampled_actions=actions,
        policy=output.policy,
        root_value=output.root_value,
        tree=policy_output.search_tree,
    )


def _take(actions: Array, index: Array) -> Array:
    """``actions[b, index[b]]`` for each row: ``[B, K, ...]`` and ``[B]`` to ``[B, ...]``."""
    return jax.vmap(lambda row, i: row[i])(actions, index)


def _sampled_recurrent_fn(
    network: MuZeroNetwork, sampler: ActionSampler, num_samples: int, config: SearchConfig
) -> Callable:
    """mctx's ``recurrent_fn`` over sampled children: the child's action from the parent's
    samples, the ordinary model step (:func:`mz_jax.mcts.model.make_recurrent_fn`), then K new
    samples at the child and their prior."""
    model_step = make_recurrent_fn(network, discount=config.discount, two_player=config.two_player)

    def recurrent_fn(
        params: Params, rng_key: Array, index: Array, embedding: SampledEmbedding
    ) -> tuple[mctx.RecurrentFnOutput, SampledEmbedding]:
        action = _take(embedding.actions, index)
        output, hidden = model_step(params, rng_key, action, embedding.hidden)
        actions = sampler.sample(rng_key, output.prior_logits, num_samples, None, 1.0)
        output = output.replace(
            prior_logits=sampler.prior_logits(output.prior_logits, actions, 1.0)
        )
        return output, SampledEmbedding(hidden, actions)

    return recurrent_fn
