"""Bring your own MuZero network: a Flax NNX model, or a few lines of jax.numpy.

mz_jax needs a network as two pure functions (a :class:`mz_jax.MuZeroNetwork`)::

    initial_inference(params, observation[B, ...])         -> (ModelOutput, hidden[B, ...])
    recurrent_inference(params, hidden[B, ...], action[B])  -> (ModelOutput, hidden[B, ...])

This example builds that pair twice and hands each to the loss (``make_loss_fn``) and to the search
(``mz_jax.search``), jitted.

    python examples/custom_network.py
"""

from __future__ import annotations

import argparse
import math

import jax
import jax.numpy as jnp
from flax import nnx

from mz_jax import Batch, ModelOutput, MuZeroNetwork, make_loss_fn, min_max_normalize
from mz_jax.config.search import SearchConfig
from mz_jax.mcts.policies import search

OBSERVATION_SIZE, NUM_ACTIONS, LATENT = 5, 4, 16
SUPPORT = 5  # value and reward logits over the support [-5, 5]: 11 bins
BINS = 2 * SUPPORT + 1


# --------------------------------------------------------------------------------------------------
# 1. A Flax NNX model, turned into pure functions with nnx.split / nnx.merge.


class TinyMuZero(nnx.Module):
    """Representation, dynamics and prediction as NNX layers (parameters only: no BatchNorm)."""

    def __init__(self, rngs: nnx.Rngs):
        self.represent = nnx.Linear(OBSERVATION_SIZE, LATENT, rngs=rngs)
        self.dynamics = nnx.Linear(LATENT + NUM_ACTIONS, LATENT, rngs=rngs)
        self.reward = nnx.Linear(LATENT + NUM_ACTIONS, BINS, rngs=rngs)
        self.value = nnx.Linear(LATENT, BINS, rngs=rngs)
        self.policy = nnx.Linear(LATENT, NUM_ACTIONS, rngs=rngs)

    def predict(self, hidden, reward_logits):
        return ModelOutput(self.value(hidden), reward_logits, self.policy(hidden))

    def initial_inference(self, observation):
        hidden = min_max_normalize(self.represent(observation))
        # The root has no incoming transition; its reward logits are never trained.
        return self.predict(hidden, jnp.zeros((observation.shape[0], BINS))), hidden

    def recurrent_inference(self, hidden, action):
        x = jnp.concatenate([hidden, jax.nn.one_hot(action, NUM_ACTIONS)], axis=-1)
        next_hidden = min_max_normalize(jax.nn.relu(self.dynamics(x)))
        return self.predict(next_hidden, self.reward(x)), next_hidden


def nnx_network(seed: int):
    """``(MuZeroNetwork, params)`` from :class:`TinyMuZero`; params is an ``nnx.State`` pytree."""
    graphdef, params = nnx.split(TinyMuZero(nnx.Rngs(seed)), nnx.Param)

    def initial_inference(params, observation):
        return nnx.merge(graphdef, params).initial_inference(observation)

    def recurrent_inference(params, hidden, action):
        return nnx.merge(graphdef, params).recurrent_inference(hidden, action)

    return MuZeroNetwork(initial_inference, recurrent_inference), params


# --------------------------------------------------------------------------------------------------
# 2. The same kind of network in plain jax.numpy: params is a dict of arrays.


def jnp_network(seed: int):
    """``(MuZeroNetwork, params)`` written with jax.numpy alone."""

    def predict(params, hidden, reward_logits):
        return ModelOutput(hidden @ params["value"], reward_logits, hidden @ params["policy"])

    def initial_inference(params, observation):
        hidden = min_max_normalize(jnp.tanh(observation @ params["represent"]))
        return predict(params, hidden, jnp.zeros((observation.shape[0], BINS))), hidden

    def recurrent_inference(params, hidden, action):
        x = jnp.concatenate([hidden, jax.nn.one_hot(action, NUM_ACTIONS)], axis=-1)
        next_hidden = min_max_normalize(jnp.tanh(x @ params["dynamics"]))
        return predict(params, next_hidden, x @ params["reward"]), next_hidden

    shapes = {
        "represent": (OBSERVATION_SIZE, LATENT),
        "dynamics": (LATENT + NUM_ACTIONS, LATENT),
        "reward": (LATENT + NUM_ACTIONS, BINS),
        "value": (LATENT, BINS),
        "policy": (LATENT, NUM_ACTIONS),
    }
    keys = jax.random.split(jax.random.key(seed), len(shapes))
    params = {
        name: jax.random.normal(key, shape) / math.sqrt(shape[0])
        for key, (name, shape) in zip(keys, shapes.items(), strict=True)
    }
    return MuZeroNetwork(initial_inference, recurrent_inference), params


# --------------------------------------------------------------------------------------------------
# Either network goes into the loss and the search unchanged.


def random_batch(key, *, batch_size: int = 8, num_unroll_steps: int = 3) -> Batch:
    """A batch of the right shapes (random data; a real one comes from mz_jax.core.targets)."""
    obs_key, action_key, value_key, policy_key = jax.random.split(key, 4)
    steps = num_unroll_steps + 1
    return Batch(
        observation=jax.random.normal(obs_key, (batch_size, OBSERVATION_SIZE)),
        actions=jax.random.randint(action_key, (batch_size, num_unroll_steps), 0, NUM_ACTIONS),
        target_value=jax.random.uniform(value_key, (batch_size, steps), minval=-1, maxval=1),
        target_reward=jnp.zeros((batch_size, steps)),
        target_policy=jax.nn.softmax(
            jax.random.normal(policy_key, (batch_size, steps, NUM_ACTIONS))
        ),
        mask=jnp.ones((batch_size, steps)),
        weight=jnp.ones(batch_size),
    )


def loss_and_search(network: MuZeroNetwork, params, key):
    """One jitted program: the loss, its gradient, and a search from the batch's observations."""
    loss_fn = make_loss_fn(network)
    config = SearchConfig(
        policy="gumbel",
        num_simulations=8,
        max_num_considered_actions=4,
        discount=0.997,
        two_player=False,
    )

    @jax.jit
    def run(params, key):
        batch_key, search_key = jax.random.split(key)
        batch = random_batch(batch_key)
        (loss, aux), grads = jax.value_and_grad(loss_fn, has_aux=True)(params, batch)
        # Action 3 is illegal everywhere here; the search never picks it.
        legal = jnp.ones((batch.observation.shape[0], NUM_ACTIONS), bool).at[:, 3].set(False)
        out = search(params, search_key, batch.observation, legal, network=network, config=config)
        return loss, aux, grads, out

    return run(params, key)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.parse_args()
    for name, make in [("flax nnx", nnx_network), ("jax.numpy", jnp_network)]:
        network, params = make(seed=0)
        loss, aux, grads, out = loss_and_search(network, params, jax.random.key(1))
        grad_norm = math.sqrt(sum(float(jnp.sum(g**2)) for g in jax.tree.leaves(grads)))
        assert math.isfinite(float(loss)) and math.isfinite(grad_norm) and grad_norm > 0
        assert bool(jnp.all(out.action != 3)) and bool(jnp.all(out.policy[:, 3] == 0))
        print(
            f"{name:>9}: loss {float(loss):.4f} (value {float(aux.losses['value']):.3f}, policy "
            f"{float(aux.losses['policy']):.3f}), gradient norm {grad_norm:.3f}, search actions "
            f"{out.action.tolist()}"
        )


if __name__ == "__main__":
    main()
