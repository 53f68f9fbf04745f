"""What Stochastic MuZero costs against MuZero: one learner update and one search, same sizes.

    python benchmarks/investigations/stochastic_cost.py [--quick]

For a CartPole-sized game (4 inputs, 2 actions, 4 chance outcomes) and a backgammon-sized one (34
inputs, 156 actions, 32 outcomes): the jitted ``value_and_grad`` of ``make_loss_fn`` and of
``make_stochastic_loss_fn`` on MLP networks of the same widths (batch 128, K = 5), and a batched
search (16 roots, 16 simulations) with each network and each policy (pUCT, Gumbel). Stochastic
MuZero runs two network steps per transition (afterstate, then chance) and the encoder, so about
twice the work is expected; the table says what it is.

A search's time also depends on the shape of its tree: each simulation walks from the root down to
a leaf and back, and each step scores all A children, so a tree that is one path 16 moves deep
costs about 16 x 17 / 2 scoring steps where a tree one move deep costs 16. mctx's pUCT normalises
the children's Q between the smallest and largest of the node's value and its visited children's;
where the one visited child's Q is above the node's value it scores 1 and every unvisited child 0
plus its prior term, 1.25 x 1/156 x sqrt(visits) for the backgammon-sized game. So an untrained
MuZero network's pUCT tree can be a single path as deep as the simulations, while Stochastic
MuZero's chance nodes, and Gumbel's Sequential Halving at the root, keep the tree shallow. The
second table gives each tree's deepest path in moves: read a ratio of the first against it.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
import mctx
import numpy as np
from common import machine_description, median_seconds, print_table

from mz_jax import Batch, make_loss_fn, make_stochastic_loss_fn, search
from mz_jax.config.search import SearchConfig
from mz_jax.mcts.chance_gumbel import gumbel_stochastic_muzero_policy
from mz_jax.mcts.model import make_chance_fn, make_decision_fn, make_recurrent_fn, make_root_fn
from mz_jax.networks import mlp_network, stochastic_mlp_network
from mz_jax.types import StochasticMuZeroNetwork

GAMES = {"CartPole-sized": (4, 2, 4), "backgammon-sized": (34, 156, 32)}
BATCH, K, ROOTS, SIMULATIONS = 128, 5, 16, 16
POLICIES = ("muzero", "gumbel")
MODEL = dict(discount=0.99, two_player=False)
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
        config = SearchConfig(policy=policy, num_simulations=SIMULATIONS, **MODEL)
        act = jax.jit(lambda p, k, o, m, c=config: search(p, k, o, m, network=network, config=c))
        times.append(
            median_seconds(
                lambda act=act: jax.block_until_ready(act(params, key, roots, legal)),
                repeats=repeats,
            )
        )
    return times


def deepest_paths(network, params, roots, legal) -> list[float]:
    """For each policy, the mean over roots of the search tree's deepest path in moves: edges for a
    MuZero tree, edges into afterstates for a Stochastic MuZero tree (the edges into chance
    outcomes are not moves).

    :func:`mz_jax.search` returns no tree, so the tree is rebuilt here with mctx's policies over the
    same model functions (``search_model``), its defaults for the rest (pUCT: mctx's Dirichlet
    noise over all actions, here all legal; Gumbel: its completed-Q transform): the same shape of
    tree as the timed search, not necessarily the same nodes.
    """
    root = make_root_fn(network)(params, None, roots)
    stochastic = isinstance(network, StochasticMuZeroNetwork)  # as mz_jax.search decides
    if stochastic:
        model = (make_decision_fn(network), make_chance_fn(network, **MODEL))
        policies = (mctx.stochastic_muzero_policy, gumbel_stochastic_muzero_policy)
    else:
        model = (make_recurrent_fn(network, **MODEL),)
        policies = (mctx.muzero_policy, mctx.gumbel_muzero_policy)
    depths = []
    for policy in policies:
        output = policy(
            params, jax.random.key(0), root, *model, SIMULATIONS, invalid_actions=~legal
        )
        parents = np.asarray(output.search_tree.parents)
        if stochastic:
            is_move = ~np.asarray(output.search_tree.embeddings.is_decision_node)
        else:
            is_move = np.ones(parents.shape, bool)
        # Node i > 0 was expanded after its parent: one pass in index order gives every depth.
        depth, rows = np.zeros(parents.shape, np.int64), np.arange(parents.shape[0])
        for node in range(1, parents.shape[1]):
            depth[:, node] = depth[rows, parents[:, node]] + is_move[:, node]
        depths.append(float(depth.max(axis=1).mean()))
    return depths


def rows(repeats: int) -> tuple[list[list[str]], list[list[str]]]:
    table, depth_table = [], []
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
            params = init(0)
            times[name] = time_update_and_search(
                network, params, loss, batch, legal, repeats=repeats
            )
            table.append([game, name, *(f"{1e3 * t:.1f}" for t in times[name])])
            depths = deepest_paths(network, params, batch.observation[:ROOTS], legal)
            depth_table.append([game, name, *(f"{d:.1f}" for d in depths)])
        ratios = [
            st / mu for st, mu in zip(times["Stochastic MuZero"], times["MuZero"], strict=True)
        ]
        table.append([game, "ratio", *(f"{r:.2f}x" for r in ratios)])
    return table, depth_table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args()
    print(machine_description())
    print(f"batch {BATCH}, K = {K}; search: {ROOTS} roots, {SIMULATIONS} simulations; MLP {SIZES}")
    table, depth_table = rows(repeats=3 if args.quick else 10)
    print_table(
        ["game", "model", "ms per update", *(f"ms per search ({p})" for p in POLICIES)], table
    )
    print("\nthe deepest path of each search tree, in moves (mean over the roots)")
    print_table(["game", "model", *(f"deepest ({p})" for p in POLICIES)], depth_table)


if __name__ == "__main__":
    main()
