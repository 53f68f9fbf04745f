"""The MLP Stochastic MuZero network: the contract's shapes, purity, what each input changes, errors."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from mz_jax.networks import count_params, stochastic_mlp_network
from mz_jax.types import StochasticMuZeroNetwork

OBS, A, C = (4,), 3, 5


@pytest.fixture(scope="module")
def built():
    network, init = stochastic_mlp_network(
        observation_shape=OBS,
        num_actions=A,
        num_chance_outcomes=C,
        hidden_sizes=(16,),
        latent_size=8,
        value_support_size=4,
        reward_support_size=3,
    )
    return network, init(0)


def _run(network, params, observation, next_observation, action, code):
    output, state = network.initial_inference(params, observation)
    after, afterstate = network.afterstate_inference(params, state, action)
    next_output, next_state = network.recurrent_inference(params, afterstate, code)
    logits = network.encode_chance(params, observation, next_observation)
    return output, state, after, afterstate, next_output, next_state, logits


@pytest.mark.parametrize("batch", [1, 3])
def test_shapes_dtypes_and_purity(built, batch):
    network, params = built
    assert isinstance(network, StochasticMuZeroNetwork) and network.num_chance_outcomes == C
    rng = np.random.default_rng(batch)
    args = (
        jnp.asarray(rng.normal(size=(batch, *OBS)), jnp.float32),
        jnp.asarray(rng.normal(size=(batch, *OBS)), jnp.float32),
        jnp.arange(batch, dtype=jnp.int32) % A,
        jax.nn.one_hot(jnp.arange(batch) % C, C),
    )
    run = jax.jit(_run, static_argnums=0)
    output, state, after, afterstate, next_output, next_state, logits = run(network, params, *args)
    assert output.value_logits.shape == (batch, 9) and output.policy_logits.shape == (batch, A)
    assert output.reward_logits.shape == (batch, 7)
    assert state.shape == afterstate.shape == next_state.shape == (batch, 8)
    assert after.value_logits.shape == (batch, 9) and after.chance_logits.shape == (batch, C)
    assert next_output.reward_logits.shape == (batch, 7) and logits.shape == (batch, C)
    for x in jax.tree.leaves((output, after, next_output, logits, state, afterstate, next_state)):
        assert x.dtype == jnp.float32
    # States are min-max scaled to [0, 1] per example (MuZero Appendix G).
    for s in (state, afterstate, next_state):
        np.testing.assert_allclose(s.min(-1), 0.0, atol=1e-6)
        np.testing.assert_allclose(s.max(-1), 1.0, atol=1e-6)
    # Zero-initialised heads: uniform prior and sigma, and value, Q and reward all at the middle bin.
    np.testing.assert_allclose(after.chance_logits, 0.0)
    np.testing.assert_allclose(output.policy_logits, 0.0)
    again = run(network, params, *args)
    for x, y in zip(
        jax.tree.leaves(again),
        jax.tree.leaves((output, state, after, afterstate, next_output, next_state, logits)),
        strict=True,
    ):
        np.testing.assert_array_equal(x, y)


def test_the_code_and_the_next_observation_matter(built):
    network, params = built
    obs = jnp.ones((2, *OBS))
    _, state = network.initial_inference(params, obs)
    _, afterstate = network.afterstate_inference(params, state, jnp.zeros(2, jnp.int32))
    codes = jax.nn.one_hot(jnp.array([0, 1]), C)
    _, next_state = network.recurrent_inference(params, jnp.repeat(afterstate[:1], 2, 0), codes)
    assert not np.allclose(next_state[0], next_state[1])
    logits = network.encode_chance(params, obs, jnp.stack([jnp.zeros(OBS), jnp.ones(OBS)]))
    assert not np.allclose(logits[0], logits[1])


def test_every_parameter_gets_a_gradient(built):
    network, params = built
    rng = np.random.default_rng(0)
    obs = jnp.asarray(rng.normal(size=(4, *OBS)), jnp.float32)
    nxt = jnp.asarray(rng.normal(size=(4, *OBS)), jnp.float32)
    target = jnp.asarray(rng.normal(size=(4, 9)), jnp.float32)

    def scalar(p):
        output, _, after, _, next_output, _, logits = _run(
            network, p, obs, nxt, jnp.array([0, 1, 2, 0]), jax.nn.softmax(jnp.ones((4, C)))
        )
        # Every output against a fixed random target, so that zero-initialised heads get gradient.
        total = sum(
            jnp.sum(x * target[:, : x.shape[-1]])
            for x in jax.tree.leaves((output, after, next_output, logits))
        )
        return total + jnp.sum(jax.nn.softmax(logits) * target[:, :C])

    # Random parameters everywhere: at initialisation the zeroed heads pass no gradient upstream.
    # numpy draws: jax.random would compile a sampler for every parameter shape.
    leaves, treedef = jax.tree.flatten(params)
    rng = np.random.default_rng(3)
    params = treedef.unflatten([jnp.asarray(rng.normal(size=x.shape), jnp.float32) for x in leaves])
    grads = jax.jit(jax.grad(scalar))(params)
    flat = jax.tree_util.tree_flatten_with_path(grads)[0]
    for path, g in flat:
        assert np.all(np.isfinite(g)), path
        assert np.abs(np.asarray(g)).sum() > 0, jax.tree_util.keystr(path)
    assert count_params(params) > 0


def test_bad_arguments_and_inputs_are_named():
    with pytest.raises(ValueError, match="num_chance_outcomes"):
        stochastic_mlp_network(observation_shape=OBS, num_actions=A, num_chance_outcomes=0)
    network, init = stochastic_mlp_network(
        observation_shape=OBS, num_actions=A, num_chance_outcomes=C, latent_size=8
    )
    params = init(1)
    with pytest.raises(ValueError, match=r"observation must have shape \[B, 4\]"):
        network.initial_inference(params, jnp.zeros((2, 5)))
    with pytest.raises(ValueError, match=r"code must have shape \[B, 5\]"):
        network.recurrent_inference(params, jnp.zeros((2, 8)), jnp.zeros((2, 4)))
    with pytest.raises(ValueError, match="action must be an integer"):
        network.afterstate_inference(params, jnp.zeros((2, 8)), jnp.zeros(2))
    with pytest.raises(ValueError, match="next_observation must have the batch size 2"):
        network.encode_chance(params, jnp.zeros((2, 4)), jnp.zeros((3, 4)))
