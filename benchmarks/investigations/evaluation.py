"""Milliseconds per greedy evaluation (``mz_jax.training.evaluate.evaluate``), when episodes end early and when
they last the whole budget.

``evaluate`` stops stepping once every episode has ended. An untrained CartPole agent's episodes end
after about ten steps, so its evaluations cost a few of the ``max_steps`` searches; an environment
whose episodes never end (CartPole with its end flags cleared) measures the full budget. Median of
a few jitted calls after compilation, 16-simulation Gumbel search, an untrained 64x64 MLP:

    python benchmarks/investigations/evaluation.py
    python benchmarks/investigations/evaluation.py --episodes 20 --max-steps 500 --repeats 5
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # benchmarks/: common.py etc.

import jax
import jax.numpy as jnp
from common import machine_description, print_table

from mz_jax import networks
from mz_jax.config.search import SearchConfig
from mz_jax.envs import make_env
from mz_jax.training import evaluate as evaluate_lib


def without_episode_ends(env):
    """``env`` whose transitions never terminate or truncate (every evaluation runs its budget)."""

    def step(key, state, action):
        state, timestep = env.step(key, state, action)
        never = jnp.zeros_like(timestep.terminated)
        return state, timestep._replace(terminated=never, truncated=never)

    return dataclasses.replace(env, step=step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--episodes", type=int, default=20)
    parser.add_argument("--max-steps", type=int, default=500)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    env = make_env("gymnax:CartPole-v1")
    network, params = networks.make_mlp_network(
        jax.random.key(0),
        observation_shape=env.observation_shape,
        num_actions=env.num_actions,
        hidden_sizes=(64, 64),
        latent_size=64,
        value_support_size=10,
        reward_support_size=10,
    )
    config = SearchConfig(
        policy="gumbel", num_simulations=16, discount=0.99, two_player=False, rescale_values=False
    )
    print(f"machine: {machine_description()}\n")
    rows = []
    for label, evaluated in (
        ("CartPole-v1, untrained agent", env),
        ("CartPole-v1 without episode ends", without_episode_ends(env)),
    ):
        evaluate = jax.jit(
            lambda key, e=evaluated: evaluate_lib.evaluate(
                params,
                key,
                env=e,
                network=network,
                search_config=config,
                num_episodes=args.episodes,
                max_steps=args.max_steps,
            )
        )
        jax.block_until_ready(evaluate(jax.random.key(0)))
        times = []
        for i in range(args.repeats):
            start = time.perf_counter()
            result = jax.block_until_ready(evaluate(jax.random.key(i + 1)))
            times.append(time.perf_counter() - start)
        rows.append(
            [
                label,
                f"{float(result.episode_length.mean()):.0f}",
                f"{statistics.median(times) * 1e3:.0f}",
            ]
        )
    print(f"{args.episodes} episodes, at most {args.max_steps} steps each:\n")
    print_table(["environment", "mean episode length", "ms per evaluation"], rows)


if __name__ == "__main__":
    main()
