"""Gumbel MuZero search with chance nodes, checked two ways.

* Against mctx's own ``gumbel_muzero_policy`` on a deterministic model that must give the same root
  statistics: move a pays ``REWARD[a]`` whatever the chance outcome and everything after it is worth
  0, so every value backed up into the root's child a is ``REWARD[a]`` in both trees (the chance
  tree's afterstate values are set to ``REWARD[a]``, consistent with its outcomes), and Sequential
  Halving, which reads only the Gumbel draws, the prior, these Q-values and the visit counts, must
  make the same visits and choose the same move.
* On a model where chance matters: a sure 1 against 3 with probability 1/4, with the prior on the
  gamble. Its best outcome is better, its expectation worse.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from mz_jax.config.search import SearchConfig
from mz_jax.core import transforms
from mz_jax.mcts.chance_gumbel import gumbel_stochastic_muzero_policy
from mz_jax.mcts.model import make_chance_fn, make_decision_fn, make_root_fn
from mz_jax.mcts.policies import search
from mz_jax.types import AfterstateOutput, ModelOutput, StochasticMuZeroNetwork

SUPPORT = 5
CHANCE = 2
ACTIONS = 4


def _scalar_logits(x):
    return jnp.log(transforms.scalar_to_support(x, SUPPORT) + 1e-30)


def _chance_model(sigma=None) -> StochasticMuZeroNetwork:
    """States are ``[depth, first action]``. Params: ``prior`` ``[B, A]`` root logits, ``reward``
    ``[B, A]`` what the first move pays, whatever the outcome (or ``reward_by_outcome`` ``[A, C]``
    where given), ``sigma`` ``[A, C]`` the first move's outcome probabilities."""

    def initial_inference(params, observation):
        batch = observation.shape[0]
        state = jnp.stack([jnp.zeros(batch), jnp.arange(batch, dtype=jnp.float32)], -1)
        zeros = jnp.zeros(batch)
        return ModelOutput(_scalar_logits(zeros), _scalar_logits(zeros), params["prior"]), state

    def afterstate_inference(params, state, action):
        first = state[:, 0] == 0
        row = state[:, 1].astype(jnp.int32)
        expected = jnp.sum(params["sigma"][action] * params["reward_by_outcome"][row, action], -1)
        q = jnp.where(first, expected, 0.0)
        sigma = jnp.where(first[:, None], params["sigma"][action], 1.0 / CHANCE)
        afterstate = jnp.stack([state[:, 0], state[:, 1], action.astype(jnp.float32)], -1)
        return AfterstateOutput(_scalar_logits(q), jnp.log(sigma)), afterstate

    def recurrent_inference(params, afterstate, code):
        first = afterstate[:, 0] == 0
        row, action = afterstate[:, 1].astype(jnp.int32), afterstate[:, 2].astype(jnp.int32)
        paid = jnp.sum(params["reward_by_outcome"][row, action] * code, axis=-1)
        reward = jnp.where(first, paid, 0.0)
        policy = jnp.zeros((reward.shape[0], params["prior"].shape[-1]))
        state = jnp.stack([afterstate[:, 0] + 1, afterstate[:, 1]], -1)
        value = _scalar_logits(jnp.zeros_like(reward))
        return ModelOutput(value, _scalar_logits(reward), policy), state

    def encode_chance(params, observation, next_observation):
        return jnp.zeros((observation.shape[0], CHANCE))

    return StochasticMuZeroNetwork(
        initial_inference, afterstate_inference, recurrent_inference, encode_chance, CHANCE
    )


def _deterministic_recurrent_fn(params, rng_key, action, state):
    """mctx's recurrent_fn of the same game without chance: state ``[depth, row]``."""
    del rng_key
    first = state[:, 0] == 0
    row = state[:, 1].astype(jnp.int32)
    reward = jnp.where(first, params["reward"][row, action], 0.0)
    output = mctx.RecurrentFnOutput(
        reward=reward,
        discount=jnp.ones_like(reward),
        prior_logits=jnp.zeros_like(params["prior"]),
        value=jnp.zeros_like(reward),
    )
    return output, jnp.stack([state[:, 0] + 1, state[:, 1]], -1)


def _params(prior, reward, sigma):
    reward = jnp.asarray(reward, jnp.float32)
    return {
        "prior": jnp.asarray(prior, jnp.float32),
        "reward": reward,
        "reward_by_outcome": jnp.repeat(reward[..., None], CHANCE, axis=-1),
        "sigma": jnp.asarray(sigma, jnp.float32),
    }


@functools.partial(jax.jit, static_argnames=("num_simulations", "considered"))
def _both(params, key, invalid, *, num_simulations, considered, gumbel_scale):
    qtransform = functools.partial(mctx.qtransform_completed_by_mix_value, value_scale=0.1)
    network = _chance_model()
    root = make_root_fn(network)(params, None, jnp.zeros((invalid.shape[0], 1)))
    settings = dict(
        invalid_actions=invalid,
        qtransform=qtransform,
        max_num_considered_actions=considered,
        gumbel_scale=gumbel_scale,
    )
    chance = gumbel_stochastic_muzero_policy(
        params,
        key,
        root,
        make_decision_fn(network),
        make_chance_fn(network, discount=1.0, two_player=False),
        num_simulations,
        **settings,
    )
    plain = mctx.gumbel_muzero_policy(
        params, key, root, _deterministic_recurrent_fn, num_simulations, **settings
    )
    return chance, plain


@pytest.mark.parametrize(
    "num_simulations, considered, gumbel_scale",
    [(16, 4, 1.0), (7, 4, 1.0), (24, 2, 1.0), (16, 4, 0.0)],
)
def test_root_matches_mctx_gumbel_muzero_on_a_model_where_chance_cannot_matter(
    num_simulations, considered, gumbel_scale
):
    rng = np.random.default_rng(num_simulations + considered)
    batch = 6
    prior = rng.normal(size=(batch, ACTIONS)) * 2
    reward = rng.uniform(-1, 1, size=(batch, ACTIONS)).round(2)
    sigma = rng.dirichlet(np.ones(CHANCE), size=ACTIONS)
    invalid = np.zeros((batch, ACTIONS), bool)
    invalid[1, 0] = invalid[2, [1, 3]] = invalid[3, [0, 1, 2]] = True  # 3, 2 and 1 legal moves
    params = _params(prior, reward, sigma)
    chance, plain = _both(
        params,
        jax.random.key(num_simulations),
        jnp.asarray(invalid),
        num_simulations=num_simulations,
        considered=considered,
        gumbel_scale=gumbel_scale,
    )
    visits = np.asarray(chance.search_tree.summary().visit_counts)
    np.testing.assert_array_equal(visits, plain.search_tree.summary().visit_counts)
    assert visits.sum(-1).tolist() == [num_simulations] * batch
    assert np.all(visits[invalid] == 0)
    np.testing.assert_array_equal(chance.action, plain.action)
    assert not np.any(invalid[np.arange(batch), np.asarray(chance.action)])
    np.testing.assert_allclose(chance.action_weights, plain.action_weights, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        chance.search_tree.summary().value, plain.search_tree.summary().value, rtol=1e-5, atol=1e-6
    )
    # The tree really has chance nodes: each visited move's child is an afterstate whose
    # outcomes were expanded below it once the move had a second visit.
    tree = chance.search_tree
    for row in range(batch):
        for action in np.flatnonzero(visits[row] >= 2):
            node = int(tree.children_index[row, 0, action])
            assert bool(tree.embeddings.is_decision_node[row, node]) is False
            outcome_children = np.flatnonzero(np.asarray(tree.parents[row]) == node)
            assert outcome_children.size >= 1
            assert np.all(np.asarray(tree.action_from_parent[row])[outcome_children] >= ACTIONS)


# --- Where chance matters, through mz_jax.search ----------------------------------------------------

GAMBLE_SIGMA = [[0.5, 0.5], [0.25, 0.75]]
GAMBLE_REWARD = [[1.0, 1.0], [3.0, 0.0]]  # move 0: a sure 1; move 1: 3 with probability 1/4


def _gamble_params(prior):
    params = _params([prior], [[0.0, 0.0]], GAMBLE_SIGMA)
    return dict(params, reward_by_outcome=jnp.asarray([GAMBLE_REWARD], jnp.float32))


@functools.partial(jax.jit, static_argnames=("config", "greedy"))
def _search(params, key, mask, *, config, greedy):
    observation = jnp.zeros((mask.shape[0], 1))
    return search(
        params, key, observation, mask, network=_chance_model(), config=config, greedy=greedy
    )


@pytest.mark.parametrize("greedy", [True, False])
def test_the_gumbel_search_prefers_the_expectation_the_prior_does_not(greedy):
    config = SearchConfig(policy="gumbel", num_simulations=32, discount=1.0, two_player=False)
    prior = [0.0, 2.0]  # the prior prefers the gamble
    params = _gamble_params(prior)
    out = _search(params, jax.random.key(3), jnp.ones((1, 2), bool), config=config, greedy=greedy)
    assert int(out.action[0]) == 0
    # The improved policy moves probability to the sure move, against the prior's 0.12.
    prior_probability = float(jax.nn.softmax(jnp.asarray(prior))[0])
    assert float(out.policy[0, 0]) > 0.5 > prior_probability
    np.testing.assert_allclose(float(out.policy[0].sum()), 1.0, rtol=1e-6)
    # The root value averages the two moves' expectations (1 and 0.75) by their visits, with the
    # root's own value (0) as one more sample: between 0.75 * 32 / 33 and 1 * 32 / 33.
    root_value = float(out.root_value[0])
    assert 0.75 * 32 / 33 - 0.06 <= root_value <= 32 / 33 + 1e-5, root_value
    only_gamble = _search(
        params, jax.random.key(3), jnp.array([[False, True]]), config=config, greedy=greedy
    )
    assert int(only_gamble.action[0]) == 1
    np.testing.assert_array_equal(only_gamble.policy[0], [0.0, 1.0])
