"""Sampled MuZero's search: ordinary MuZero's when every action is drawn, the best sample found on a
continuous bandit, fresh samples at every node, and the prior over the samples."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax import SearchConfig
from mz_jax.core.transforms import h, scalar_to_two_hot
from mz_jax.mcts.policies import search
from mz_jax.mcts.sampled import (
    categorical_without_replacement,
    sampled_search,
    squashed_gaussian,
)
from mz_jax.networks import make_mlp_network
from mz_jax.types import ModelOutput, MuZeroNetwork

NUM_ACTIONS = 5
SUPPORT = 10


def search_config(**fields) -> SearchConfig:
    return SearchConfig(discount=0.99, two_player=False, **fields)


@pytest.fixture(scope="module")
def discrete():
    network, params = make_mlp_network(
        jax.random.key(1), observation_shape=(3,), num_actions=NUM_ACTIONS, hidden_sizes=(16,),
        latent_size=8,
    )  # fmt: skip
    observation = jax.random.normal(jax.random.key(2), (4, 3))
    return network, params, observation


@pytest.mark.parametrize("policy", ["muzero", "gumbel"])
@pytest.mark.parametrize("greedy", [True, False])
def test_with_every_action_drawn_without_replacement_the_search_is_muzeros(
    discrete, policy, greedy
):
    network, params, observation = discrete
    config = search_config(policy=policy, num_simulations=24, max_num_considered_actions=4)
    legal = jnp.ones((4, NUM_ACTIONS), bool)
    key = jax.random.key(3)
    expected = search(
        params, key, observation, legal, network=network, config=config, greedy=greedy
    )
    got = sampled_search(
        params, key, observation, legal, network=network, config=config, greedy=greedy,
        sampler=categorical_without_replacement(), num_samples=NUM_ACTIONS,
    )  # fmt: skip
    np.testing.assert_array_equal(got.sampled_actions, np.tile(np.arange(NUM_ACTIONS), (4, 1)))
    np.testing.assert_array_equal(got.action, expected.action)
    np.testing.assert_array_equal(got.action_index, expected.action)
    np.testing.assert_allclose(got.policy, expected.policy, atol=1e-6)
    np.testing.assert_allclose(got.root_value, expected.root_value, atol=1e-6)


def test_fewer_samples_than_actions_get_the_policy_restricted_to_them(discrete):
    network, params, observation = discrete
    config = search_config(policy="muzero", num_simulations=8)
    out = sampled_search(
        params, jax.random.key(4), observation, network=network, config=config, greedy=True,
        sampler=categorical_without_replacement(), num_samples=2,
    )  # fmt: skip
    logits = np.asarray(network.initial_inference(params, observation)[0].policy_logits, np.float64)
    pi = np.exp(logits - logits.max(-1, keepdims=True))
    pi /= pi.sum(-1, keepdims=True)
    samples = np.asarray(out.sampled_actions)
    assert samples.shape == (4, 2) and np.all(samples[:, 0] < samples[:, 1])  # distinct, in order
    restricted = np.take_along_axis(pi, samples, axis=-1)
    restricted /= restricted.sum(-1, keepdims=True)
    root_logits = np.asarray(out.tree.children_prior_logits[:, 0], np.float64)
    root_prior = np.exp(root_logits - root_logits.max(-1, keepdims=True))
    root_prior /= root_prior.sum(-1, keepdims=True)
    np.testing.assert_allclose(root_prior, restricted, rtol=1e-5)


def encode(x):
    """Categorical logits whose decoded scalar is ``x`` ``[B]`` (the network's format)."""
    return jnp.log(scalar_to_two_hot(h(x), SUPPORT) + 1e-12)


def bandit_network(best: float) -> MuZeroNetwork:
    """A one-step continuous bandit: one action dimension, reward -(a - best)^2 for the first
    action and 0 after it, every value 0, the policy N(0, 1) before the squash. The hidden state
    counts the actions taken."""

    def output(hidden, reward):
        batch = hidden.shape[0]
        return ModelOutput(
            value_logits=encode(jnp.zeros(batch)),
            reward_logits=encode(reward),
            policy_logits=jnp.zeros((batch, 2)),
        )

    def initial_inference(params, observation):
        hidden = jnp.zeros((observation.shape[0], 1))
        return output(hidden, jnp.zeros(observation.shape[0])), hidden

    def recurrent_inference(params, hidden, action):
        reward = jnp.where(hidden[:, 0] == 0, -((action[:, 0] - best) ** 2), 0.0)
        return output(hidden, reward), hidden + 1

    return MuZeroNetwork(initial_inference, recurrent_inference)


def test_on_a_continuous_bandit_gumbel_search_picks_the_best_sample():
    # Gumbel MuZero's greedy choice is the considered action of the best completed Q: with every
    # sample considered and visited, the sample of the highest reward.
    best, samples = 0.3, 6
    config = search_config(policy="gumbel", num_simulations=64, max_num_considered_actions=samples)
    out = sampled_search(
        None, jax.random.key(5), jnp.zeros((8, 1)), network=bandit_network(best),
        sampler=squashed_gaussian([-1.0], [1.0]), num_samples=samples, config=config, greedy=True,
    )  # fmt: skip
    actions = np.asarray(out.sampled_actions)
    assert actions.shape == (8, samples, 1) and np.all(np.abs(actions) <= 1.0)
    closest = np.argmin(np.abs(actions[..., 0] - best), axis=-1)
    np.testing.assert_array_equal(out.action_index, closest)
    np.testing.assert_allclose(out.action[:, 0], actions[np.arange(8), closest, 0])
    # the prior over distinct draws from the policy itself is uniform
    np.testing.assert_allclose(
        jax.nn.softmax(out.tree.children_prior_logits[:, 0]), 1 / samples, rtol=1e-5
    )


def test_muzero_search_over_samples_targets_its_visit_distribution():
    config = search_config(policy="muzero", num_simulations=32)
    out = sampled_search(
        None, jax.random.key(7), jnp.zeros((8, 1)), network=bandit_network(0.3),
        sampler=squashed_gaussian([-1.0], [1.0]), num_samples=4, config=config, greedy=True,
    )  # fmt: skip
    visits = np.asarray(out.tree.children_visits[:, 0])
    assert np.all(visits.sum(-1) == 32)
    np.testing.assert_allclose(out.policy, visits / 32, rtol=1e-6)
    np.testing.assert_array_equal(out.action_index, np.argmax(visits, axis=-1))


def test_every_expanded_node_draws_its_own_samples():
    config = search_config(policy="muzero", num_simulations=16)
    out = sampled_search(
        None, jax.random.key(6), jnp.zeros((2, 1)), network=bandit_network(0.0),
        sampler=squashed_gaussian([-2.0], [0.5]), num_samples=3, config=config,
    )  # fmt: skip
    tree = out.tree
    expanded = np.asarray(tree.node_visits[0] > 0)
    node_samples = np.asarray(tree.embeddings.actions[0])[expanded]  # [nodes, K, 1]
    assert len(node_samples) > 3 and np.all((node_samples >= -2.0) & (node_samples <= 0.5))
    flat = node_samples.reshape(len(node_samples), -1)
    assert len({tuple(np.round(row, 6)) for row in flat}) == len(flat)  # no two nodes alike
    np.testing.assert_allclose(node_samples[0], out.sampled_actions[0])  # the root's


def test_bad_arguments_are_refused_in_one_line(discrete):
    network, params, observation = discrete
    with pytest.raises(ValueError, match="num_samples 1 is invalid: allowed an integer >= 2"):
        sampled_search(
            params, jax.random.key(0), observation, network=network, config=search_config(),
            sampler=categorical_without_replacement(), num_samples=1,
        )  # fmt: skip
    with pytest.raises(ValueError, match="infinite") as error:
        squashed_gaussian([-math.inf], [1.0])
    assert "\n" not in str(error.value)


def test_a_wider_root_proposal_is_corrected_by_beta_hat_over_beta():
    # With beta N(0, 2^2) (temperature 4) and pi N(0, 1) before the squash, the prior of a draw
    # a = tanh(u) is proportional to pi(u) / beta(u): the squash's Jacobian cancels.
    config = search_config(policy="muzero", num_simulations=4, dirichlet_fraction=0.0)
    out = sampled_search(
        None, jax.random.key(8), jnp.zeros((3, 1)), network=bandit_network(0.3),
        sampler=squashed_gaussian([-1.0], [1.0]), num_samples=5, config=config,
        proposal_temperature=4.0,
    )  # fmt: skip
    u = np.arctanh(np.asarray(out.sampled_actions, np.float64)[..., 0])
    log_ratio = (-(u**2) / 2) - (-(u**2) / 8 - math.log(2.0))
    expected = np.exp(log_ratio - log_ratio.max(-1, keepdims=True))
    expected /= expected.sum(-1, keepdims=True)
    logits = np.asarray(out.tree.children_prior_logits[:, 0], np.float64)
    prior = np.exp(logits - logits.max(-1, keepdims=True))
    prior /= prior.sum(-1, keepdims=True)
    np.testing.assert_allclose(prior, expected, rtol=1e-4)
    with pytest.raises(ValueError, match="proposal_temperature 0 is invalid: allowed a number > 0"):
        sampled_search(
            None, jax.random.key(8), jnp.zeros((3, 1)), network=bandit_network(0.3),
            sampler=squashed_gaussian([-1.0], [1.0]), num_samples=5, config=config,
            proposal_temperature=0,
        )  # fmt: skip


@pytest.fixture(scope="module")
def continuous():
    """An MLP network for a two-dimensional action in the Box [-2, 2] x [0, 1]."""
    return make_mlp_network(
        jax.random.key(9), observation_shape=(3,), num_actions=2, hidden_sizes=(16,),
        latent_size=8, action_bounds=((-2.0, 0.0), (2.0, 1.0)),
    )  # fmt: skip


def test_a_continuous_mlp_predicts_a_gaussian_and_steps_on_float_actions(continuous):
    network, params = continuous
    observation = jax.random.normal(jax.random.key(10), (4, 3))
    output, hidden = network.initial_inference(params, observation)
    np.testing.assert_array_equal(output.policy_logits, np.zeros((4, 4)))  # mean 0, log_std 0
    inside = jnp.array([[2.0, 1.0]] * 4)
    beyond = jnp.array([[7.0, 3.0]] * 4)  # clipped to the Box's corner
    other = jnp.array([[-2.0, 0.0]] * 4)
    at_corner, _ = network.recurrent_inference(params, hidden, inside)
    past_corner, _ = network.recurrent_inference(params, hidden, beyond)
    _, next_hidden = network.recurrent_inference(params, hidden, other)
    _, corner_hidden = network.recurrent_inference(params, hidden, inside)
    np.testing.assert_array_equal(at_corner.reward_logits, past_corner.reward_logits)
    assert not np.allclose(next_hidden, corner_hidden)
    with pytest.raises(ValueError, match=r"action must be a float array of shape \[B, D\]"):
        network.recurrent_inference(params, hidden, jnp.zeros((4,), jnp.int32))


def test_sampled_search_runs_on_a_continuous_mlp(continuous):
    network, params = continuous
    out = sampled_search(
        params, jax.random.key(11), jnp.ones((4, 3)), network=network,
        sampler=squashed_gaussian((-2.0, 0.0), (2.0, 1.0)), num_samples=4,
        config=search_config(num_simulations=8),
    )  # fmt: skip
    actions = np.asarray(out.sampled_actions)
    assert actions.shape == (4, 4, 2) and out.action.shape == (4, 2)
    assert np.all((actions[..., 0] >= -2) & (actions[..., 0] <= 2))
    assert np.all((actions[..., 1] >= 0) & (actions[..., 1] <= 1))
    np.testing.assert_array_equal(out.action, actions[np.arange(4), out.action_index])


@pytest.mark.parametrize(
    "bounds",
    [((-1.0,), (1.0,)), ((-math.inf, 0.0), (1.0, 1.0)), ((1.0, 0.0), (1.0, 1.0)), "box"],
)
def test_a_continuous_mlp_refuses_bad_bounds_in_one_line(bounds):
    with pytest.raises(
        ValueError, match=r"'action_bounds' = .* is invalid: allowed None or"
    ) as error:
        make_mlp_network(0, observation_shape=(3,), num_actions=2, action_bounds=bounds)
    assert "\n" not in str(error.value)
