"""What Stochastic MuZero costs against MuZero: one learner update and one search, same sizes.

    python benchmarks/stochastic_cost.py [--quick]

For a CartPole-sized game (4 inputs, 2 actions, 4 chance outcomes) and a backgammon-sized one (34
inputs, 156 actions, 32 outcomes): the jitted ``value_and_grad`` of ``make_loss_fn`` and of
``make_stochastic_loss_fn`` on MLP networks of the same widths (batch 128, K = 5), and a batched
search (16 roots, 16 simulations) with each network and each policy (pUCT, Gumbel). Stochastic
MuZero runs two network steps per transition (afterstate, then chance) and the encoder, so about
twice the work is expected; the table says what it is.
"""

from __future__ import annotations

import argparse

import jax
import jax.numpy as jnp
import numpy as np
from common import machine_description, median_seconds, print_table

from mz_jax import Batch, make_loss_fn, make_stochastic_loss_fn, search
from mz_jax.mcts import SearchConfig
from mz_jax.networks import mlp_network, stochastic_mlp_network

GAMES = {"CartPole-sized": (4, 2, 4), "backgammon-sized": (34, 156, 32)}
BATCH, K, ROOTS = 128, 5, 16
POLICIES = ("muzero", "gumbel")
SIZES = dict(hidden_sizes=(64, 64), latent_size=64, value_support_size=10, reward_support_size=10)


def make_batch(observation_size: int, num_actions: int) -> Batch:
    rng = np.random.default_rng(0)
    f32 = lambda x: jnp.asarray(x, jnp.float32)
    return Batch(
        observation=f32(rng.normal(size=(BATCH, observation_size))),
        actions=jnp.asarray(rng.integers(0, num_actions, size=(BATCH, K)), jnp.int32),
        target_value=f32(rng.normal(size=(BATCH, K + 1))),
        target_reward=f32(rng.normal(size=(BATCH, K + 1))),
        target_policy=f32(rng.dirichlet(np.ones(num_actions), size=(BATCH, K + 1))),
        mask=jnp.ones((BATCH, K + 1)),
        weight=jnp.ones(BATCH),
        next_observation=f32(rng.normal(size=(BATCH, K, observation_size))),
    )


def time_update_and_search(network, params, loss, batch, legal, *, repeats):
    """Median seconds of one jitted ``value_and_grad`` of ``loss`` and of one search with each
    policy."""
    grad = jax.jit(jax.value_and_grad(loss, has_aux=True))
    roots, key = batch.observation[: legal.shape[0]], jax.random.key(0)
    times = [median_seconds(lambda: jax.block_until_ready(grad(params, batch)), repeats=repeats)]
    for policy in POLICIES:
        config = SearchConfig(policy=policy, num_simulations=16, discount=0.99, two_player=False)
        act = jax.jit(lambda p, k, o, m, c=config: search(p, k, o, m, network=network, config=c))
        times.append(
            median_seconds(
                lambda act=act: jax.block_until_ready(act(params, key, roots, legal)),
                repeats=repeats,
            )
        )
    return times


def rows(repeats: int) -> list[list[str]]:
    table = []
    for game, (observation_size, num_actions, chance) in GAMES.items():
        common = dict(observation_shape=(observation_size,), num_actions=num_actions, **SIZES)
        muzero, muzero_init = mlp_network(**common)
        stochastic, stochastic_init = stochastic_mlp_network(**common, num_chance_outcomes=chance)
        batch = make_batch(observation_size, num_actions)
        legal = jnp.ones((ROOTS, num_actions), bool)
        times = {}
        for name, network, init, loss in (
            ("MuZero", muzero, muzero_init, make_loss_fn(muzero)),
            ("Stochastic MuZero", stochastic, stochastic_init, make_stochastic_loss_fn(stochastic)),
        ):
            times[name] = time_update_and_search(
                network, init(0), loss, batch, legal, repeats=repeats
            )
            table.append([game, name, *(f"{1e3 * t:.1f}" for t in times[name])])
        ratios = [
            st / mu for st, mu in zip(times["Stochastic MuZero"], times["MuZero"], strict=True)
        ]
        table.append([game, "ratio", *(f"{r:.2f}x" for r in ratios)])
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    print(machine_description())
    print(f"batch {BATCH}, K = {K}; search: {ROOTS} roots, 16 simulations; MLP {SIZES}")
    searches = [f"ms per search ({policy})" for policy in POLICIES]
    print_table(
        ["game", "model", "ms per update", *searches], rows(repeats=3 if args.quick else 10)
    )


if __name__ == "__main__":
    main()
