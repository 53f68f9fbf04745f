"""Does a MuZero model learn what a move does? A held-out counterfactual test on an image game.

    python benchmarks/diagnostics/action_effects.py [--env gymnax:Asterix-MinAtar] [--updates 3000]
        [--networks mlp mlp_conv resnet]

Random play (64 environments x 2,000 steps) gives the transitions; for every state it also records
the reward each action would have earned from it with the same randomness (a gymnax step is a pure
function of its key). Each network's model is trained on the one-step reward term alone (the
representation, one dynamics step along the action taken, cross-entropy against phi(reward)) for
``--updates`` Adam updates of batch 128 on 80% of the transitions. On the other 20%:

* **best move earns**: over the held-out states where the reward depends on the move, the share
  in which the move of highest predicted reward earns the highest reward; **chance** is the share
  a uniformly random move gets. This is what a search needs from its model.
* **AUC**: how well the predicted reward ranks rewarded transitions above unrewarded ones; it
  rises when the model sees that a reward is near, whatever the move.

Networks: ``mlp`` is the ``breakout_minatar_mlp`` preset's (256 x 256, latent 128, the action
one-hot beside the flat latent state), ``mlp_conv`` the same with a 16-channel convolution before
it (``network.conv_channels``), ``resnet`` and ``resnet8`` the ResNet with one block of 16 and 8
channels (the action as planes beside a spatial latent state).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.stats
from common import machine_description, print_table

from mz_jax import networks
from mz_jax.core import transforms
from mz_jax.envs import make_env

NUM_ENVS, NUM_STEPS, BATCH_SIZE = 64, 2_000, 128


def collect(env, key):
    """Random play: observations, actions, rewards, and every action's reward from each state."""

    def step(carry, key):
        state, timestep = carry
        action_key, step_key = jax.random.split(key)
        action = jax.random.randint(action_key, (NUM_ENVS,), 0, env.num_actions)
        step_keys = jax.random.split(step_key, NUM_ENVS)
        next_state, next_timestep = jax.vmap(env.step)(step_keys, state, action)

        def reward_of(a):
            every = jnp.full((NUM_ENVS,), a, jnp.int32)
            return jax.vmap(env.step)(step_keys, state, every)[1].reward

        rewards = jax.vmap(reward_of)(jnp.arange(env.num_actions)).T  # [envs, A]
        return (next_state, next_timestep), (timestep.observation, action, rewards)

    reset_key, key = jax.random.split(key)
    start = jax.vmap(env.reset)(jax.random.split(reset_key, NUM_ENVS))
    _, (observation, action, rewards) = jax.lax.scan(step, start, jax.random.split(key, NUM_STEPS))
    flat = lambda x: np.asarray(x).reshape(NUM_STEPS * NUM_ENVS, *x.shape[2:])
    return flat(observation).astype(np.float32), flat(action), flat(rewards).astype(np.float32)


def make_model(kind, key, observation_shape, num_actions, support_size):
    """``(params, reward_logits(params, observation, action))`` for the network ``kind``."""
    if kind.startswith("mlp"):
        network, params = networks.make_mlp_network(
            key,
            observation_shape=observation_shape,
            num_actions=num_actions,
            hidden_sizes=(256, 256),
            latent_size=128,
            reward_support_size=support_size,
            conv_channels=16 if kind == "mlp_conv" else None,
        )
    else:
        network, params = networks.make_resnet_network(
            key,
            observation_shape=observation_shape,
            num_actions=num_actions,
            channels={"resnet": 16, "resnet8": 8}[kind],
            num_blocks=1,
            reward_support_size=support_size,
        )

    def reward_logits(params, observation, action):
        _, hidden = network.initial_inference(params, observation)
        return network.recurrent_inference(params, hidden, action)[0].reward_logits

    return params, reward_logits


def auc(scores, positive):
    """The probability that a positive row scores above a negative one (ties count half)."""
    ranks = scipy.stats.rankdata(scores)  # ties get their average rank
    n_pos, n_neg = positive.sum(), (~positive).sum()
    return (ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def measure(kind, data, *, env, support_size, updates, seed):
    observation, action, rewards = data
    reward = rewards[np.arange(len(action)), action]
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(action))
    train, held_out = order[: int(0.8 * len(order))], order[int(0.8 * len(order)) :]
    params, reward_logits = make_model(
        kind, jax.random.key(seed), observation.shape[1:], env.num_actions, support_size
    )
    optimizer = optax.adam(1e-3)

    def loss(params, o, a, r):
        target = transforms.scalar_to_support(r, support_size)
        log_probs = jax.nn.log_softmax(reward_logits(params, o, a))
        return -jnp.mean(jnp.sum(target * log_probs, axis=-1))

    @jax.jit
    def update(params, opt_state, o, a, r):
        grads = jax.grad(loss)(params, o, a, r)
        changes, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, changes), opt_state

    predict = jax.jit(lambda p, o, a: transforms.logits_to_scalar(reward_logits(p, o, a)))

    def predict_all(rows, actions):
        return np.concatenate(
            [
                np.asarray(predict(params, observation[rows[i : i + 4096]], actions[i : i + 4096]))
                for i in range(0, len(rows), 4096)
            ]
        )

    start = time.perf_counter()
    opt_state = optimizer.init(params)
    for _ in range(updates):
        rows = rng.choice(train, BATCH_SIZE)
        params, opt_state = update(params, opt_state, observation[rows], action[rows], reward[rows])
    jax.block_until_ready(params)
    seconds = time.perf_counter() - start

    truth = rewards[held_out]
    matters = held_out[truth.max(1) > truth.min(1)]
    truth = rewards[matters]
    predicted = np.stack(
        [predict_all(matters, np.full(len(matters), a)) for a in range(env.num_actions)], axis=1
    )
    best = truth.max(1, keepdims=True)
    earns = float(np.mean(truth[np.arange(len(matters)), predicted.argmax(1)] == best[:, 0]))
    chance = float(np.mean(truth == best))
    area = auc(predict_all(held_out, action[held_out]), reward[held_out] > 0)
    return [kind, len(matters), f"{earns:.2f}", f"{chance:.2f}", f"{area:.3f}", f"{seconds:.0f}"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--env", default="gymnax:Asterix-MinAtar")
    parser.add_argument("--updates", type=int, default=3_000)
    parser.add_argument(
        "--networks",
        nargs="+",
        default=["mlp", "mlp_conv", "resnet8", "resnet"],
        choices=["mlp", "mlp_conv", "resnet8", "resnet"],
    )
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    env = make_env(args.env)
    if len(env.observation_shape) != 3:
        parser.error(f"--env {args.env} observes {env.observation_shape}; allowed: image games")
    support_size = transforms.support_size_for(env.reward_bound or 1.0)
    data = collect(env, jax.random.key(args.seed + 1_000))
    rewarded = int(np.sum(data[2][np.arange(len(data[1])), data[1]] > 0))
    print(f"machine: {machine_description()}")
    print(
        f"{args.env}: {len(data[1]):,} random-play transitions ({rewarded:,} rewarded), "
        f"{args.updates:,} updates of batch {BATCH_SIZE} on the one-step reward term\n"
    )
    rows = [
        measure(
            kind, data, env=env, support_size=support_size, updates=args.updates, seed=args.seed
        )
        for kind in args.networks
    ]
    headers = ["network", "held-out states where the move matters", "best move earns"]
    headers += ["chance", "AUC, rewarded vs not", "training s"]
    print_table(headers, rows)


if __name__ == "__main__":
    main()
