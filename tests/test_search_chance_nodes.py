"""The Stochastic MuZero search on hand-made models whose expectations are known by hand.

The model: one decision at the root, then one chance event. Action a leads to an afterstate whose
chance outcomes have probabilities ``SIGMA[a]`` and pay ``REWARD[a, c]``; everything after that pays 0
and is worth 0, so the exact value of action a is ``sum_c SIGMA[a, c] REWARD[a, c]``.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import pytest

from mz_jax.config.search import SearchConfig
from mz_jax.core import transforms
from mz_jax.mcts.model import make_chance_fn, make_decision_fn, make_root_fn
from mz_jax.mcts.policies import search
from mz_jax.types import AfterstateOutput, ModelOutput, StochasticMuZeroNetwork

SUPPORT = 3
CHANCE = 3


def _scalar_logits(x):
    return jnp.log(transforms.scalar_to_support(x, SUPPORT) + 1e-30)


def _model(num_actions: int) -> StochasticMuZeroNetwork:
    """A state or afterstate is ``[depth, action]``; params hold the tables ``sigma`` ``[A, C]``,
    ``reward`` ``[A, C]``, ``next_value`` (the value of every state after the chance event) and
    ``prior`` ``[A]``."""

    def initial_inference(params, observation):
        batch = observation.shape[0]
        state = jnp.zeros((batch, 2))
        zeros = jnp.zeros(batch)
        prior = jnp.broadcast_to(params["prior"], (batch, num_actions))
        return ModelOutput(_scalar_logits(zeros), _scalar_logits(zeros), prior), state

    def afterstate_inference(params, state, action):
        first = state[:, 0] == 0
        sigma = jnp.where(first[:, None], params["sigma"][action], 1.0 / CHANCE)
        output = AfterstateOutput(_scalar_logits(jnp.zeros(action.shape)), jnp.log(sigma))
        return output, jnp.stack([state[:, 0], action.astype(jnp.float32)], axis=-1)

    def recurrent_inference(params, afterstate, code):
        first = afterstate[:, 0] == 0
        action = afterstate[:, 1].astype(jnp.int32)
        reward = jnp.where(first, jnp.sum(params["reward"][action] * code, axis=-1), 0.0)
        value = jnp.full(reward.shape, params["next_value"])
        policy = jnp.zeros((reward.shape[0], num_actions))
        next_state = jnp.stack([afterstate[:, 0] + 1, afterstate[:, 1]], axis=-1)
        return ModelOutput(_scalar_logits(value), _scalar_logits(reward), policy), next_state

    def encode_chance(params, observation, next_observation):
        return jnp.zeros((observation.shape[0], CHANCE))

    return StochasticMuZeroNetwork(
        initial_inference, afterstate_inference, recurrent_inference, encode_chance, CHANCE
    )


def _params(sigma, reward, next_value=0.0):
    sigma, reward = jnp.asarray(sigma, jnp.float32), jnp.asarray(reward, jnp.float32)
    return {
        "sigma": sigma,
        "reward": reward,
        "next_value": jnp.float32(next_value),
        "prior": jnp.zeros(sigma.shape[0]),
    }


@functools.partial(jax.jit, static_argnames=("num_actions", "num_simulations", "two_player"))
def _tree(params, *, num_actions, num_simulations, two_player=False, discount=1.0):
    """mctx's Stochastic MuZero search on the model through mz_jax's root, decision and chance
    functions, and the tree it built."""
    network = _model(num_actions)
    root = make_root_fn(network)(params, None, jnp.zeros((1, 1)))
    output = mctx.stochastic_muzero_policy(
        params,
        jax.random.key(0),
        root,
        make_decision_fn(network),
        make_chance_fn(network, discount=discount, two_player=two_player),
        num_simulations,
        dirichlet_fraction=0.0,
    )
    return output.search_tree


def _afterstate_node(tree, action):
    return tree.children_index[0, mctx.Tree.ROOT_INDEX, action]


def _outcome_children(tree, node, num_actions):
    """``{outcome: child node}`` below a chance node. mctx returns the tree with its children
    arrays cut to the A actions, so the outcomes' nodes are found by their parent."""
    parents = np.asarray(tree.parents[0])
    moves = np.asarray(tree.action_from_parent[0])
    children = np.flatnonzero(parents == int(node))
    return {int(moves[child]) - num_actions: int(child) for child in children}


def test_chance_outcomes_are_visited_in_proportion_to_sigma():
    sigma = np.array([[0.5, 0.3, 0.2]])
    tree = _tree(_params(sigma, np.zeros((1, CHANCE))), num_actions=1, num_simulations=201)
    children = _outcome_children(tree, _afterstate_node(tree, 0), num_actions=1)
    node_visits = np.asarray(tree.node_visits[0])
    visits = np.array([node_visits[children[c]] if c in children else 0 for c in range(CHANCE)])
    # The first of the 201 simulations expands the afterstate; the other 200 pick an outcome.
    np.testing.assert_array_equal(visits.sum(), 200)
    np.testing.assert_allclose(visits, 200 * sigma[0], atol=1.0)


def test_root_value_is_the_expectation_over_chance_not_its_best_outcome():
    # One action; outcomes pay 3 with probability 1/4 and 0 otherwise: the expectation is 0.75.
    sigma, reward = [[0.25, 0.75, 0.0]], [[3.0, 0.0, 0.0]]
    tree = _tree(_params(sigma, reward), num_actions=1, num_simulations=400)
    root_value = float(tree.summary().value[0])
    assert abs(root_value - 0.75) <= 0.05 * 0.75, root_value


def test_the_search_prefers_the_better_expectation_over_the_better_outcome():
    # Action 0: a sure 1. Action 1: 3 with probability 1/4, else 0 (expectation 0.75, best 3).
    sigma = [[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]]
    reward = [[1.0, 1.0, 0.0], [3.0, 0.0, 0.0]]
    tree = _tree(_params(sigma, reward), num_actions=2, num_simulations=200)
    q = np.asarray(tree.qvalues(jnp.zeros(1, jnp.int32))[0, :2])
    visits = np.asarray(tree.summary().visit_counts[0, :2])
    assert visits[0] > visits[1], visits
    # Each root child's Q is the running mean of its afterstate's first value (0) and its visits.
    for action, exact in ((0, 1.0), (1, 0.75)):
        n = visits[action]
        assert abs(q[action] - exact * (n - 1) / n) <= 0.05 * exact + 3.0 / n, (action, q, visits)


@pytest.mark.parametrize("two_player, expected", [(False, 1.5), (True, 0.5)])
def test_the_chance_edge_carries_the_discount_and_the_sign_between_players(two_player, expected):
    # A sure reward of 1 for the player who acted; the next state is worth 0.5 to the player to
    # move there: the same player (1 + 0.5) or the opponent (1 - 0.5).
    sigma, reward = [[1.0, 0.0, 0.0]], [[1.0, 1.0, 1.0]]
    params = _params(sigma, reward, next_value=0.5)
    tree = _tree(params, num_actions=1, num_simulations=2, two_player=two_player)
    node = _afterstate_node(tree, 0)
    (child,) = _outcome_children(tree, node, num_actions=1).values()
    np.testing.assert_allclose(float(tree.raw_values[0, child]), 0.5, rtol=1e-5)
    assert float(tree.children_discounts[0, mctx.Tree.ROOT_INDEX, 0]) == 1.0  # move -> afterstate
    # The afterstate's value after its outcome was expanded: (Q(as) = 0 + (1 + d * 0.5)) / 2.
    np.testing.assert_allclose(float(tree.node_values[0, node]), expected / 2, rtol=1e-5)


# --- Through mz_jax.search -------------------------------------------------------------------------

SEARCH = SearchConfig(policy="muzero", num_simulations=32, discount=1.0, two_player=False)
SIGMA2 = [[0.5, 0.5, 0.0], [0.25, 0.75, 0.0]]
REWARD2 = [[1.0, 1.0, 0.0], [3.0, 0.0, 0.0]]


@functools.partial(jax.jit, static_argnames=("config", "greedy"))
def _search(params, key, mask, *, config=SEARCH, greedy=False):
    observation = jnp.zeros((mask.shape[0], 1))
    return search(params, key, observation, mask, network=_model(2), config=config, greedy=greedy)


def test_search_with_a_stochastic_network_acts_legally_and_greedily():
    params = _params(SIGMA2, REWARD2)
    mask = jnp.array([[True, True], [False, True], [False, False]])
    out = _search(params, jax.random.key(1), mask, greedy=True)
    assert out.action.shape == (3,) and out.action.dtype == jnp.int32
    assert out.policy.shape == (3, 2) and out.policy.dtype == jnp.float32
    np.testing.assert_array_equal(out.action[:2], [0, 1])  # the better expectation; the only legal
    np.testing.assert_array_equal(out.policy[1], [0.0, 1.0])
    np.testing.assert_array_equal(out.has_legal_action, [True, True, False])
    np.testing.assert_array_equal(out.policy[2], [0.0, 0.0])
    np.testing.assert_allclose(out.policy[:2].sum(-1), 1.0, rtol=1e-6)
    again = _search(params, jax.random.key(7), mask, greedy=True)
    np.testing.assert_array_equal(out.policy, again.policy)  # greedy depends on the position alone
    for key in range(8):  # sampling at temperature 1 never picks the illegal action
        assert int(_search(params, jax.random.key(key), mask).action[1]) == 1


def test_completed_q_target_on_the_chance_node_tree():
    # The prior prefers action 1 (logits 0 and 2). The target is softmax(prior + sigma(Q)) with the
    # root children's Q from the same tree (greedy: mctx's key 0 and no Dirichlet noise, as _tree).
    params = dict(_params(SIGMA2, REWARD2), prior=jnp.array([0.0, 2.0]))
    config = dataclasses.replace(SEARCH, num_simulations=64, policy_target="completed_q")
    out = _search(params, jax.random.key(3), jnp.ones((1, 2), bool), config=config, greedy=True)
    tree = _tree(params, num_actions=2, num_simulations=64)
    q = np.asarray(tree.qvalues(jnp.zeros(1, jnp.int32))[0, :2])
    visits = np.asarray(tree.summary().visit_counts[0, :2])
    assert visits.min() > 0 and q[0] != q[1], (visits, q)
    # Both children visited: the completed Q is Q itself, rescaled to [0, 1] over the two (0 for
    # the worse, 1 for the better), so sigma is (maxvisit_init + max visits) * value_scale there.
    logits = np.array([0.0, 2.0]) + (50 + visits.max()) * 0.1 * (q == q.max())
    expected = np.exp(logits - logits.max()) / np.exp(logits - logits.max()).sum()
    np.testing.assert_allclose(out.policy[0], expected, rtol=1e-4, atol=1e-7)
    assert int(np.argmax(out.policy[0])) == int(np.argmax(q))
    illegal = _search(params, jax.random.key(3), jnp.array([[True, False]]), config=config)
    np.testing.assert_array_equal(illegal.policy[0], [1.0, 0.0])  # only action 0 is legal
