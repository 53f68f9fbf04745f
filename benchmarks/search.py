"""Simulations per second of mz_jax.mcts.policies with a small untrained MLP network.

Measures ``batch * num_simulations / seconds`` for one jitted search call, after compilation, as the
median of a few timed calls (each ended with ``block_until_ready``), for both policies over batch
sizes and action counts; then the effect of ``max_depth`` on the MuZero policy, whose pUCT search
builds deep, narrow trees under an untrained network.

    python benchmarks/search.py            # the full table
    python benchmarks/search.py --quick    # fewer configurations, for a smoke test
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import platform
import statistics
import time
from collections.abc import Iterator

import jax
import jax.numpy as jnp
import mctx
import numpy as np

from mz_jax.config.search import SearchConfig
from mz_jax.mcts.model import make_recurrent_fn, make_root_fn
from mz_jax.mcts.policies import search
from mz_jax.types import ModelOutput, MuZeroNetwork

OBSERVATION_SIZE = 16
HIDDEN_SIZE = 64
SUPPORT_BINS = 21  # support [-10, 10]


def make_mlp(num_actions: int) -> MuZeroNetwork:
    """A two-layer MLP representation, dynamics and prediction network in plain jax.numpy."""

    def predict(params, hidden):
        x = jax.nn.relu(hidden @ params["trunk"])
        return x @ params["value"], x @ params["reward"], x @ params["policy"]

    def initial_inference(params, observation):
        hidden = jnp.tanh(observation @ params["embed"])
        return ModelOutput(*predict(params, hidden)), hidden

    def recurrent_inference(params, hidden, action):
        inputs = jnp.concatenate([hidden, jax.nn.one_hot(action, num_actions)], axis=-1)
        hidden = jnp.tanh(jax.nn.relu(inputs @ params["dynamics_1"]) @ params["dynamics_2"])
        return ModelOutput(*predict(params, hidden)), hidden

    return MuZeroNetwork(initial_inference, recurrent_inference)


def init_mlp(rng_key, num_actions: int) -> dict:
    """Random (untrained) weights, scaled by fan-in."""
    shapes = {
        "embed": (OBSERVATION_SIZE, HIDDEN_SIZE),
        "dynamics_1": (HIDDEN_SIZE + num_actions, HIDDEN_SIZE),
        "dynamics_2": (HIDDEN_SIZE, HIDDEN_SIZE),
        "trunk": (HIDDEN_SIZE, HIDDEN_SIZE),
        "value": (HIDDEN_SIZE, SUPPORT_BINS),
        "reward": (HIDDEN_SIZE, SUPPORT_BINS),
        "policy": (HIDDEN_SIZE, num_actions),
    }
    keys = jax.random.split(rng_key, len(shapes))
    return {
        name: jax.random.normal(key, shape) / math.sqrt(shape[0])
        for key, (name, shape) in zip(keys, shapes.items(), strict=True)
    }


def time_search(config: SearchConfig, batch_size: int, num_actions: int, repeats: int) -> float:
    """Median seconds of one jitted search call (compiled beforehand)."""
    network = make_mlp(num_actions)
    params = init_mlp(jax.random.key(0), num_actions)
    observation = jax.random.normal(jax.random.key(1), (batch_size, OBSERVATION_SIZE))
    legal = jnp.ones((batch_size, num_actions), bool)
    run = jax.jit(functools.partial(search, network=network, config=config))
    jax.block_until_ready(run(params, jax.random.key(2), observation, legal))  # compile
    seconds = []
    for i in range(repeats):
        key = jax.random.key(3 + i)
        start = time.perf_counter()
        jax.block_until_ready(run(params, key, observation, legal))
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds)


def max_tree_depth(config: SearchConfig, batch_size: int, num_actions: int) -> int:
    """The deepest node of the muzero policy's trees (edges from the root), over the batch."""
    network = make_mlp(num_actions)
    params = init_mlp(jax.random.key(0), num_actions)
    observation = jax.random.normal(jax.random.key(1), (batch_size, OBSERVATION_SIZE))

    @jax.jit
    def parents(rng_key):
        root = make_root_fn(network)(params, rng_key, observation)
        recurrent_fn = make_recurrent_fn(
            network, discount=config.discount, two_player=config.two_player
        )
        output = mctx.muzero_policy(
            params,
            rng_key,
            root,
            recurrent_fn,
            config.num_simulations,
            max_depth=config.max_depth,
        )
        return output.search_tree.parents

    parent = np.asarray(parents(jax.random.key(2)))
    depth = np.zeros_like(parent)
    # Node i is created by simulation i, after its parent: one pass in index order suffices.
    for node in range(1, parent.shape[1]):
        depth[:, node] = np.where(
            parent[:, node] >= 0, depth[np.arange(batch_size), parent[:, node]] + 1, 0
        )
    return int(depth.max())


def time_policies(
    batch_sizes, action_counts, *, num_simulations: int, repeats: int
) -> Iterator[tuple[str, int, int, float]]:
    """``(policy, batch, actions, seconds per call)`` for both policies over the grid, as measured."""
    for policy in ("muzero", "gumbel"):
        for num_actions in action_counts:
            for batch_size in batch_sizes:
                config = SearchConfig(
                    policy=policy, num_simulations=num_simulations, discount=0.997, two_player=False
                )
                seconds = time_search(config, batch_size, num_actions, repeats)
                yield policy, batch_size, num_actions, seconds


def time_max_depths(
    *, num_simulations: int, repeats: int
) -> Iterator[tuple[int | None, int, float]]:
    """``(max_depth, deepest node reached, seconds per call)`` of the muzero policy, batch 64, 18
    actions, without and with a depth limit of 8."""
    for max_depth in (None, 8):
        config = SearchConfig(
            policy="muzero",
            num_simulations=num_simulations,
            max_depth=max_depth,
            discount=0.997,
            two_player=False,
        )
        seconds = time_search(config, 64, 18, repeats)
        yield max_depth, max_tree_depth(config, 64, 18), seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer configurations")
    parser.add_argument("--num-simulations", type=int, default=32)
    parser.add_argument(
        "--depth-simulations",
        type=int,
        default=None,
        help="simulations for the max_depth study (default 128, 64 with --quick)",
    )
    parser.add_argument("--repeats", type=int, default=None, help="timed calls per configuration")
    args = parser.parse_args()

    if args.quick:
        batch_sizes, action_counts, repeats = (1, 64), (9,), 3
    else:
        batch_sizes, action_counts, repeats = (1, 64, 256), (2, 9, 18), 5
    repeats = args.repeats or repeats
    n = args.num_simulations
    depth_n = args.depth_simulations or (64 if args.quick else 128)

    device = jax.devices()[0]
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, python {platform.python_version()}"
    )
    print(
        f"jax {jax.__version__}, mctx {mctx.__version__}, device: {device.platform} "
        f"({device.device_kind}), {jax.device_count()} device(s), timing on the first"
    )
    print(
        f"network: MLP (hidden {HIDDEN_SIZE}, {SUPPORT_BINS}-bin value/reward), untrained; "
        f"{n} simulations; median of {repeats} calls after compilation"
    )
    print()
    header = f"{'policy':<8} {'batch':>6} {'actions':>8} {'max_depth':>10} {'ms/call':>10} {'sims/s':>12}"
    print(header)
    print("-" * len(header))
    for policy, batch_size, num_actions, seconds in time_policies(
        batch_sizes, action_counts, num_simulations=n, repeats=repeats
    ):
        print(
            f"{policy:<8} {batch_size:>6} {num_actions:>8} {'None':>10} "
            f"{1e3 * seconds:>10.2f} {batch_size * n / seconds:>12,.0f}"
        )

    print()
    print(
        f"max_depth, muzero policy (batch 64, 18 actions, {depth_n} simulations); "
        "tree depth: the deepest node reached"
    )
    header = f"{'max_depth':>10} {'tree depth':>11} {'ms/call':>10} {'sims/s':>12}"
    print(header)
    print("-" * len(header))
    for max_depth, depth, seconds in time_max_depths(num_simulations=depth_n, repeats=repeats):
        print(
            f"{max_depth!s:>10} {depth:>11} {1e3 * seconds:>10.2f} {64 * depth_n / seconds:>12,.0f}"
        )


if __name__ == "__main__":
    main()
